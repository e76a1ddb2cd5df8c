//! What `#[agent]` checks of the impl it is given: which methods it holds, their parameters and
//! return types, each with a message that says what is expected.

use super::*;

/// Everything the generated `impl Agent` needs, checked.
pub(super) struct Checked<'a> {
    pub(super) output: Type,
    pub(super) emits: Vec<Type>,
    pub(super) name: LitStr,
    pub(super) model: Model,
    pub(super) prompt: Prompt<'a>,
    pub(super) on_output: OnOutput<'a>,
    pub(super) when: Option<When<'a>>,
    pub(super) tools: Tools,
    pub(super) max_turns: Option<Span>,
    /// `fn system` / `fn messages` / `fn images` / `fn reasoning`, when given: the span of
    /// each one's return type.
    pub(super) system: Option<Span>,
    pub(super) messages: Option<Span>,
    pub(super) images: Option<Span>,
    pub(super) reasoning: Option<Span>,
    /// `reply = field`: the output field that is the chat reply.
    pub(super) reply: Option<LitStr>,
    /// Where Open Harness is (`crate = path`, or the facade).
    pub(super) krate: TokenStream,
}

/// Where the agent's model comes from.
pub(super) enum Model {
    /// None: the trait's default, the provider's choice.
    None,
    /// `model = "..."`.
    Name(LitStr),
    /// `fn model(&self) -> &str` (or `-> Option<&str>`): the span of its return type.
    Method(Span),
}

/// Where the agent's tools come from.
pub(super) enum Tools {
    /// None: the trait's default, no tools.
    None,
    /// `tools = [t1, t2]`.
    List(Vec<Expr>),
    /// `fn tools(&self) -> Vec<Arc<dyn Tool>>`: the span of its return type.
    Method(Span),
}

/// `fn prompt(&self, state: &State, trigger: &Trigger) -> String`.
pub(super) struct Prompt<'a> {
    pub(super) state: &'a Type,
    pub(super) trigger: &'a Type,
    pub(super) return_span: Span,
}

/// `fn on_output(&self, output: Output, trigger: &Trigger) -> impl IntoEmit`; the trigger
/// parameter may be left out.
pub(super) struct OnOutput<'a> {
    pub(super) output: &'a Type,
    pub(super) name_span: Span,
    pub(super) takes_trigger: bool,
    pub(super) returns_unit: bool,
    pub(super) return_span: Span,
}

/// `fn when(&self, state: &State) -> bool`.
pub(super) struct When<'a> {
    pub(super) state: &'a Type,
    pub(super) return_span: Span,
}

pub(super) fn check<'a>(
    args: AgentArgs,
    item: &'a ItemImpl,
    errors: &mut Errors,
) -> Option<Checked<'a>> {
    if let Some((_, path, _)) = &item.trait_ {
        errors.spanned_by(path, msg::AGENT_TRAIT_IMPL);
    }
    if !item.generics.params.is_empty() {
        errors.spanned_by(&item.generics, msg::AGENT_GENERIC_IMPL);
    }
    if args.output.is_none() {
        errors.at(Span::call_site(), msg::AGENT_MISSING_OUTPUT);
    }
    if args.emits.is_none() {
        errors.at(Span::call_site(), msg::AGENT_MISSING_EMITS);
    }
    let mut seen = HashSet::new();
    for ty in args.emits.iter().flatten() {
        let text = names::display(ty);
        if !seen.insert(text.clone()) {
            errors.spanned_by(ty, msg::agent_duplicate_emit(&text));
        }
    }
    let name = match &args.name {
        Some(name) => Some(name.clone()),
        None => match names::type_ident(&item.self_ty) {
            Some(ident) => Some(LitStr::new(&names::kebab(&ident.to_string()), ident.span())),
            None => {
                errors.spanned_by(&item.self_ty, msg::AGENT_NO_TYPE_NAME);
                None
            }
        },
    };

    let method = |name: &str| {
        item.items.iter().find_map(|item| match item {
            ImplItem::Fn(function) if function.sig.ident == name => Some(function),
            _ => None,
        })
    };
    let prompt = match method("prompt") {
        Some(function) => check_prompt(function, errors),
        None => {
            errors.spanned_by(&item.self_ty, msg::AGENT_MISSING_PROMPT);
            None
        }
    };
    let on_output = match method("on_output") {
        Some(function) => check_on_output(function, errors),
        None => {
            let output = args
                .output
                .as_ref()
                .map_or_else(|| "Output".to_owned(), names::display);
            errors.spanned_by(&item.self_ty, msg::agent_missing_on_output(&output));
            None
        }
    };
    let when = method("when").and_then(|function| check_when(function, errors));
    let when_ok = method("when").is_none() || when.is_some();
    let tools = check_tools(args.tools, method("tools"), errors);
    let model = check_model(args.model, method("model"), errors);
    let model_ok = model.is_some();
    let max_turns = method("max_turns").map(|function| check_max_turns(function, errors));
    let max_turns_ok = !matches!(max_turns, Some(None));
    let system = method("system")
        .map(|function| check_state_trigger(function, msg::AGENT_SYSTEM_ARITY, errors));
    let messages = method("messages")
        .map(|function| check_state_trigger(function, msg::AGENT_MESSAGES_ARITY, errors));
    let images = method("images")
        .map(|function| check_state_trigger(function, msg::AGENT_IMAGES_ARITY, errors));
    let reasoning = method("reasoning")
        .map(|function| check_state_trigger(function, msg::AGENT_REASONING_ARITY, errors));
    let extras_ok = [&system, &messages, &images, &reasoning]
        .iter()
        .all(|extra| !matches!(extra, Some(None)));

    match (
        args.output,
        args.emits,
        name,
        prompt,
        on_output,
        when_ok,
        tools,
    ) {
        (
            Some(output),
            Some(emits),
            Some(name),
            Some(prompt),
            Some(on_output),
            true,
            Some(tools),
        ) if max_turns_ok && model_ok && extras_ok => Some(Checked {
            output,
            emits,
            name,
            model: model.unwrap_or(Model::None),
            prompt,
            on_output,
            when,
            tools,
            max_turns: max_turns.flatten(),
            system: system.flatten(),
            messages: messages.flatten(),
            images: images.flatten(),
            reasoning: reasoning.flatten(),
            reply: args.reply,
            krate: args.krate.tokens(),
        }),
        _ => None,
    }
}

/// The parameters after `&self`, once the method itself has been checked: synchronous, safe,
/// not generic, taking `&self`. `None` if the receiver is missing.
pub(super) fn typed_params<'a>(
    function: &'a ImplItemFn,
    errors: &mut Errors,
) -> Option<Vec<&'a PatType>> {
    let sig = &function.sig;
    let name = sig.ident.to_string();
    if let Some(token) = &sig.asyncness {
        errors.spanned_by(token, msg::agent_async(&name));
    }
    if let Some(token) = &sig.unsafety {
        errors.spanned_by(token, msg::agent_unsafe(&name));
    }
    errors.refuse_generics(&sig.generics, msg::agent_generic(&name));
    let mut inputs = sig.inputs.iter();
    match inputs.next() {
        Some(FnArg::Receiver(receiver)) => {
            if !matches!(&*receiver.ty, Type::Reference(r) if r.mutability.is_none()) {
                errors.spanned_by(receiver, msg::agent_receiver(&name));
            }
        }
        _ => {
            errors.at(sig.paren_token.span.join(), msg::agent_receiver(&name));
            return None;
        }
    }
    Some(
        inputs
            .filter_map(|input| match input {
                FnArg::Typed(param) => Some(param),
                FnArg::Receiver(_) => None,
            })
            .collect(),
    )
}

/// `&T` gives `T`; anything else is reported with `message`.
pub(super) fn shared_ref<'a>(
    param: &'a PatType,
    message: &str,
    errors: &mut Errors,
) -> Option<&'a Type> {
    match &*param.ty {
        Type::Reference(reference) if reference.mutability.is_none() => Some(&*reference.elem),
        other => {
            errors.spanned_by(other, message);
            None
        }
    }
}

/// Reports wrong arity on the extra parameters, or on the parentheses if some are missing.
pub(super) fn arity(
    function: &ImplItemFn,
    params: &[&PatType],
    expected: usize,
    message: &str,
) -> syn::Error {
    match params.get(expected..) {
        Some(extra) if !extra.is_empty() => syn::Error::new_spanned(quote!(#(#extra),*), message),
        _ => syn::Error::new(function.sig.paren_token.span.join(), message),
    }
}

pub(super) fn return_span(function: &ImplItemFn) -> Span {
    match &function.sig.output {
        ReturnType::Default => function.sig.ident.span(),
        ReturnType::Type(_, ty) => ty.span(),
    }
}

pub(super) fn check_prompt<'a>(
    function: &'a ImplItemFn,
    errors: &mut Errors,
) -> Option<Prompt<'a>> {
    let params = typed_params(function, errors)?;
    let [state, trigger] = params.as_slice() else {
        errors.push(arity(function, &params, 2, msg::AGENT_PROMPT_ARITY));
        return None;
    };
    let state = shared_ref(state, msg::AGENT_PROMPT_STATE, errors);
    let trigger = shared_ref(trigger, msg::AGENT_PROMPT_TRIGGER, errors);
    Some(Prompt {
        state: state?,
        trigger: trigger?,
        return_span: return_span(function),
    })
}

pub(super) fn check_on_output<'a>(
    function: &'a ImplItemFn,
    errors: &mut Errors,
) -> Option<OnOutput<'a>> {
    let params = typed_params(function, errors)?;
    let (output, trigger) = match params.as_slice() {
        [output] => (output, None),
        [output, trigger] => (output, Some(trigger)),
        _ => {
            errors.push(arity(function, &params, 2, msg::AGENT_ON_OUTPUT_ARITY));
            return None;
        }
    };
    let mut ok = true;
    if matches!(&*output.ty, Type::Reference(_)) {
        errors.spanned_by(&output.ty, msg::AGENT_ON_OUTPUT_BY_VALUE);
        ok = false;
    }
    if let Some(trigger) = trigger {
        ok &= shared_ref(trigger, msg::AGENT_ON_OUTPUT_TRIGGER, errors).is_some();
    }
    let returns_unit = match &function.sig.output {
        ReturnType::Default => true,
        ReturnType::Type(_, ty) => matches!(&**ty, Type::Tuple(tuple) if tuple.elems.is_empty()),
    };
    ok.then(|| OnOutput {
        output: &output.ty,
        name_span: function.sig.ident.span(),
        takes_trigger: trigger.is_some(),
        returns_unit,
        return_span: return_span(function),
    })
}

pub(super) fn check_when<'a>(function: &'a ImplItemFn, errors: &mut Errors) -> Option<When<'a>> {
    let params = typed_params(function, errors)?;
    let [state] = params.as_slice() else {
        errors.push(arity(function, &params, 1, msg::AGENT_WHEN_ARITY));
        return None;
    };
    Some(When {
        state: shared_ref(state, msg::AGENT_WHEN_STATE, errors)?,
        return_span: return_span(function),
    })
}

/// The tools, from `tools = [...]` or `fn tools`, not both. `None` after reporting an error.
pub(super) fn check_tools(
    arg: Option<ToolsArg>,
    function: Option<&ImplItemFn>,
    errors: &mut Errors,
) -> Option<Tools> {
    match (arg, function) {
        (None, None) => Some(Tools::None),
        (Some(arg), None) => Some(Tools::List(arg.tools)),
        (Some(arg), Some(function)) => {
            errors.spanned_by(&arg.key, msg::AGENT_TOOLS_TWICE);
            errors.spanned_by(&function.sig.ident, msg::AGENT_TOOLS_TWICE);
            None
        }
        (None, Some(function)) => {
            let params = typed_params(function, errors)?;
            if !params.is_empty() {
                errors.push(arity(function, &params, 0, msg::AGENT_TOOLS_ARITY));
                return None;
            }
            match &function.sig.output {
                ReturnType::Default => {
                    errors.spanned_by(&function.sig.ident, msg::AGENT_TOOLS_RETURN);
                    None
                }
                ReturnType::Type(_, ty) => Some(Tools::Method(ty.span())),
            }
        }
    }
}

/// The model, from `model = "..."` or `fn model`, not both. `None` after reporting an error.
pub(super) fn check_model(
    arg: Option<LitStr>,
    function: Option<&ImplItemFn>,
    errors: &mut Errors,
) -> Option<Model> {
    match (arg, function) {
        (None, None) => Some(Model::None),
        (Some(name), None) => Some(Model::Name(name)),
        (Some(name), Some(function)) => {
            errors.spanned_by(&name, msg::AGENT_MODEL_TWICE);
            errors.spanned_by(&function.sig.ident, msg::AGENT_MODEL_TWICE);
            None
        }
        (None, Some(function)) => {
            let params = typed_params(function, errors)?;
            if !params.is_empty() {
                errors.push(arity(function, &params, 0, msg::AGENT_MODEL_ARITY));
                return None;
            }
            match &function.sig.output {
                ReturnType::Default => {
                    errors.spanned_by(&function.sig.ident, msg::AGENT_MODEL_RETURN);
                    None
                }
                ReturnType::Type(_, ty) => Some(Model::Method(ty.span())),
            }
        }
    }
}

/// `fn max_turns(&self) -> u32`: the span of its return type, `None` after reporting an error.
pub(super) fn check_max_turns(function: &ImplItemFn, errors: &mut Errors) -> Option<Span> {
    let params = typed_params(function, errors)?;
    if !params.is_empty() {
        errors.push(arity(function, &params, 0, msg::AGENT_MAX_TURNS_ARITY));
        return None;
    }
    Some(return_span(function))
}

/// A method taking `&self`, the state and the trigger, as `prompt` does (`system`,
/// `messages`, `images`, `reasoning`): the span of its return type, `None` after reporting `arity_message`.
pub(super) fn check_state_trigger(
    function: &ImplItemFn,
    arity_message: &str,
    errors: &mut Errors,
) -> Option<Span> {
    let params = typed_params(function, errors)?;
    if params.len() != 2 {
        errors.push(arity(function, &params, 2, arity_message));
        return None;
    }
    Some(return_span(function))
}
