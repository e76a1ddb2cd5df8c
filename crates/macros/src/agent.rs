//! `#[agent(output = T, emits = [...], tools = [...])]`: reads the agent's `prompt`, `on_output`
//! and optional `when`, `model`, `tools`, `max_turns`, `system`, `messages`, `images` and
//! `reasoning` methods from its `impl` block, checks their
//! signatures, and generates `impl Agent` (state and trigger types taken from `prompt`'s
//! parameters), with compile-time checks that the output is a structured output, that every
//! type in `emits` is an event, that `on_output` returns one of them (or `()` or `Emit`, whose
//! events are checked at run time), and that every entry of `tools` is a tool.

use std::collections::HashSet;

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{
    Expr, FnArg, GenericParam, ImplItem, ImplItemFn, Item, ItemImpl, LitStr, PatType, ReturnType,
    Type,
};

use crate::attr::{AgentArgs, ToolsArg};
use crate::errors::{Errors, msg};
use crate::names;

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let mut errors = Errors::new();
    let args = match AgentArgs::parse(attr, &mut errors) {
        Ok(args) => args,
        Err(err) => return Err(errors.fail(err)),
    };
    let item = match syn::parse2::<Item>(item) {
        Ok(Item::Impl(item)) => item,
        Ok(_) => return Err(errors.fail(syn::Error::new(Span::call_site(), msg::AGENT_ITEM))),
        Err(err) => return Err(errors.fail(err)),
    };
    let agent = check(args, &item, &mut errors);
    errors.finish()?;
    match agent {
        Some(agent) => Ok(generate(&item, &agent)),
        // `check` returns `None` only after reporting an error.
        None => Err(syn::Error::new(Span::call_site(), msg::AGENT_ITEM)),
    }
}

/// Everything the generated `impl Agent` needs, checked.
struct Checked<'a> {
    output: Type,
    emits: Vec<Type>,
    name: LitStr,
    model: Model,
    prompt: Prompt<'a>,
    on_output: OnOutput<'a>,
    when: Option<When<'a>>,
    tools: Tools,
    max_turns: Option<Span>,
    /// `fn system` / `fn messages` / `fn images` / `fn reasoning`, when given: the span of
    /// each one's return type.
    system: Option<Span>,
    messages: Option<Span>,
    images: Option<Span>,
    reasoning: Option<Span>,
    /// `reply = field`: the output field that is the chat reply.
    reply: Option<LitStr>,
    /// Where Open Harness is (`crate = path`, or the facade).
    krate: TokenStream,
}

/// Where the agent's model comes from.
enum Model {
    /// None: the trait's default, the provider's choice.
    None,
    /// `model = "..."`.
    Name(LitStr),
    /// `fn model(&self) -> &str` (or `-> Option<&str>`): the span of its return type.
    Method(Span),
}

/// Where the agent's tools come from.
enum Tools {
    /// None: the trait's default, no tools.
    None,
    /// `tools = [t1, t2]`.
    List(Vec<Expr>),
    /// `fn tools(&self) -> Vec<Arc<dyn Tool>>`: the span of its return type.
    Method(Span),
}

/// `fn prompt(&self, state: &State, trigger: &Trigger) -> String`.
struct Prompt<'a> {
    state: &'a Type,
    trigger: &'a Type,
    return_span: Span,
}

/// `fn on_output(&self, output: Output, trigger: &Trigger) -> impl IntoEmit`; the trigger
/// parameter may be left out.
struct OnOutput<'a> {
    output: &'a Type,
    name_span: Span,
    takes_trigger: bool,
    returns_unit: bool,
    return_span: Span,
}

/// `fn when(&self, state: &State) -> bool`.
struct When<'a> {
    state: &'a Type,
    return_span: Span,
}

fn check<'a>(args: AgentArgs, item: &'a ItemImpl, errors: &mut Errors) -> Option<Checked<'a>> {
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
fn typed_params<'a>(function: &'a ImplItemFn, errors: &mut Errors) -> Option<Vec<&'a PatType>> {
    let sig = &function.sig;
    let name = sig.ident.to_string();
    if let Some(token) = &sig.asyncness {
        errors.spanned_by(token, msg::agent_async(&name));
    }
    if let Some(token) = &sig.unsafety {
        errors.spanned_by(token, msg::agent_unsafe(&name));
    }
    let generic = sig
        .generics
        .params
        .iter()
        .filter(|param| !matches!(param, GenericParam::Lifetime(_)))
        .collect::<Vec<_>>();
    if !generic.is_empty() {
        errors.spanned_by(quote!(#(#generic),*), msg::agent_generic(&name));
    }
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
fn shared_ref<'a>(param: &'a PatType, message: &str, errors: &mut Errors) -> Option<&'a Type> {
    match &*param.ty {
        Type::Reference(reference) if reference.mutability.is_none() => Some(&*reference.elem),
        other => {
            errors.spanned_by(other, message);
            None
        }
    }
}

/// Reports wrong arity on the extra parameters, or on the parentheses if some are missing.
fn arity(function: &ImplItemFn, params: &[&PatType], expected: usize, message: &str) -> syn::Error {
    match params.get(expected..) {
        Some(extra) if !extra.is_empty() => syn::Error::new_spanned(quote!(#(#extra),*), message),
        _ => syn::Error::new(function.sig.paren_token.span.join(), message),
    }
}

fn return_span(function: &ImplItemFn) -> Span {
    match &function.sig.output {
        ReturnType::Default => function.sig.ident.span(),
        ReturnType::Type(_, ty) => ty.span(),
    }
}

fn check_prompt<'a>(function: &'a ImplItemFn, errors: &mut Errors) -> Option<Prompt<'a>> {
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

fn check_on_output<'a>(function: &'a ImplItemFn, errors: &mut Errors) -> Option<OnOutput<'a>> {
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

fn check_when<'a>(function: &'a ImplItemFn, errors: &mut Errors) -> Option<When<'a>> {
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
fn check_tools(
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
fn check_model(
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
fn check_max_turns(function: &ImplItemFn, errors: &mut Errors) -> Option<Span> {
    let params = typed_params(function, errors)?;
    if !params.is_empty() {
        errors.push(arity(function, &params, 0, msg::AGENT_MAX_TURNS_ARITY));
        return None;
    }
    Some(return_span(function))
}

/// A method taking `&self`, the state and the trigger, as `prompt` does (`system`,
/// `messages`, `images`, `reasoning`): the span of its return type, `None` after reporting `arity_message`.
fn check_state_trigger(
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

fn generate(item: &ItemImpl, agent: &Checked<'_>) -> TokenStream {
    let self_ty = &item.self_ty;
    let Checked {
        output,
        emits,
        name,
        model,
        prompt,
        on_output,
        when,
        tools,
        max_turns,
        system,
        messages,
        images,
        reasoning,
        reply,
        krate,
    } = agent;
    let reply = reply.as_ref().map(|field| {
        quote! {
            fn reply(&self) -> #krate::adapter::ReplySource {
                #krate::adapter::ReplySource::Field(#field)
            }
        }
    });
    let Prompt {
        state,
        trigger,
        return_span,
    } = prompt;

    // `InEmits` is implemented for exactly the types in `emits`; its supertrait reports a type
    // that is not an event (once: `EMITS` names them through it too).
    let in_emits = emits.iter().map(|ty| {
        quote_spanned! {ty.span()=>
            impl InEmits for #ty {}
        }
    });
    let emits_names = emits
        .iter()
        .map(|ty| quote_spanned!(ty.span()=> event_name::<#ty>()));
    let model = match model {
        Model::None => None,
        Model::Name(model) => Some(quote! {
            fn model(&self) -> ::core::option::Option<&str> {
                ::core::option::Option::Some(#model)
            }
        }),
        // `&str` or `Option<&str>`; another type is reported on the method's return type.
        Model::Method(span) => {
            let value = quote_spanned!(*span=> model);
            let name = quote_spanned!(*span=> ModelName::name(#value));
            Some(quote! {
                fn model(&self) -> ::core::option::Option<&str> {
                    #[diagnostic::on_unimplemented(
                        message = "`fn model` returns the name of the model to ask for, not `{Self}`",
                        label = "return `&str`, or `Option<&str>` (`None`: the provider's choice)"
                    )]
                    trait ModelName<'a> {
                        fn name(self) -> ::core::option::Option<&'a str>;
                    }
                    impl<'a> ModelName<'a> for &'a str {
                        fn name(self) -> ::core::option::Option<&'a str> {
                            ::core::option::Option::Some(self)
                        }
                    }
                    impl<'a> ModelName<'a> for ::core::option::Option<&'a str> {
                        fn name(self) -> ::core::option::Option<&'a str> {
                            self
                        }
                    }
                    let #value = <#self_ty>::model(self);
                    #name
                }
            })
        }
    };
    let when = when.as_ref().map(|when| {
        let state_arg = quote_spanned!(when.state.span()=> state);
        let call = quote_spanned!(when.return_span=> <#self_ty>::when(self, #state_arg));
        quote! {
            fn when(&self, state: &Self::State) -> bool {
                #call
            }
        }
    });
    let (tools, tool_check) = generate_tools(self_ty, tools, krate);
    let max_turns = max_turns.map(|span| {
        let value = quote_spanned!(span=> max_turns);
        quote! {
            fn max_turns(&self) -> u32 {
                let #value = <#self_ty>::max_turns(self);
                #value
            }
        }
    });
    // `String` or `Option<String>`; another type is reported on the method's return type.
    let system = system.map(|span| {
        let value = quote_spanned!(span=> system);
        let into = quote_spanned!(span=> SystemPrompt::into_system(#value));
        quote! {
            fn system(
                &self,
                state: &Self::State,
                trigger: &Self::Trigger,
            ) -> ::core::option::Option<::std::string::String> {
                #[diagnostic::on_unimplemented(
                    message = "`fn system` returns the system prompt, not `{Self}`",
                    label = "return `String`, or `Option<String>` (`None`: no system prompt)"
                )]
                trait SystemPrompt {
                    fn into_system(self) -> ::core::option::Option<::std::string::String>;
                }
                impl SystemPrompt for ::std::string::String {
                    fn into_system(self) -> ::core::option::Option<::std::string::String> {
                        ::core::option::Option::Some(self)
                    }
                }
                impl SystemPrompt for ::core::option::Option<::std::string::String> {
                    fn into_system(self) -> ::core::option::Option<::std::string::String> {
                        self
                    }
                }
                let #value = <#self_ty>::system(self, state, trigger);
                #into
            }
        }
    });
    let messages = messages.map(|span| {
        let value = quote_spanned!(span=> messages);
        quote! {
            fn messages(
                &self,
                state: &Self::State,
                trigger: &Self::Trigger,
            ) -> ::std::vec::Vec<#krate::ChatMessage> {
                let #value = <#self_ty>::messages(self, state, trigger);
                #value
            }
        }
    });
    let images = images.map(|span| {
        let value = quote_spanned!(span=> images);
        quote! {
            fn images(
                &self,
                state: &Self::State,
                trigger: &Self::Trigger,
            ) -> ::std::vec::Vec<#krate::Image> {
                let #value = <#self_ty>::images(self, state, trigger);
                #value
            }
        }
    });
    let reasoning = reasoning.map(|span| {
        let value = quote_spanned!(span=> reasoning);
        quote! {
            fn reasoning(
                &self,
                state: &Self::State,
                trigger: &Self::Trigger,
            ) -> ::core::option::Option<#krate::ReasoningEffort> {
                let #value = <#self_ty>::reasoning(self, state, trigger);
                #value
            }
        }
    });
    // Spanned on the return type: a prompt that does not return `String` is reported there.
    let prompt_value = quote_spanned!(*return_span=> prompt);
    let prompt_call = quote! {
        let #prompt_value = <#self_ty>::prompt(self, state, trigger);
        #prompt_value
    };

    // The call is spanned on the method's name and the output argument on its parameter type,
    // so an `on_output` taking another type than `output = T` is reported on that parameter.
    let output_arg = quote_spanned!(on_output.output.span()=> output);
    let (trigger_param, on_output_call) = if on_output.takes_trigger {
        (
            quote!(trigger),
            quote_spanned!(on_output.name_span=> <#self_ty>::on_output(self, #output_arg, trigger)),
        )
    } else {
        (
            quote!(_trigger),
            quote_spanned!(on_output.name_span=> <#self_ty>::on_output(self, #output_arg)),
        )
    };
    let on_output_body = if on_output.returns_unit {
        quote! {
            #on_output_call;
            #krate::Emit::none()
        }
    } else {
        // The argument is spanned on the return type: a return type that is neither `Emit`
        // nor an event in `emits` is reported there.
        let emitted = quote_spanned!(on_output.return_span=> emitted);
        let into_emit = quote_spanned!(on_output.return_span=> OnOutputReturn::into_emit);
        quote! {
            let #emitted = #on_output_call;
            #into_emit(#emitted)
        }
    };
    let list = format!(
        "[{}]",
        emits
            .iter()
            .map(names::display)
            .collect::<Vec<_>>()
            .join(", ")
    );
    let [message, label, note] = msg::agent_not_in_emits(&list);

    // A call of a function bounded by `StructuredOutput` (not the well-formedness of a type
    // with a `StructuredOutput` bound), so rustc reports the trait's own message, "`T` cannot be an
    // agent's structured output", rather than the first missing supertrait.
    let assert_output = quote_spanned! {output.span()=>
        let _ = assert_output::<#output>;
    };

    // Everything is generated inside an anonymous const, so the helper traits are the
    // agent's own and invisible to the rest of the crate; the `impl` is global all the same.
    quote! {
        #item

        const _: () = {
            /// The events in this agent's `emits`.
            #[allow(dead_code)]
            trait InEmits: #krate::Event {}
            #(#in_emits)*

            #[allow(dead_code)]
            const fn event_name<T: InEmits>() -> &'static str {
                <T as #krate::Event>::NAME
            }

            /// What `on_output` may return: an event in `emits`, `()` or `Emit` (whose events
            /// the runtime checks against `emits`).
            #[diagnostic::on_unimplemented(message = #message, label = #label, note = #note)]
            #[allow(dead_code)]
            trait OnOutputReturn {
                fn into_emit(self) -> #krate::Emit;
            }
            impl<T: InEmits> OnOutputReturn for T {
                fn into_emit(self) -> #krate::Emit {
                    #krate::Emit::one(self)
                }
            }
            impl OnOutputReturn for () {
                fn into_emit(self) -> #krate::Emit {
                    #krate::Emit::none()
                }
            }
            impl OnOutputReturn for #krate::Emit {
                fn into_emit(self) -> #krate::Emit {
                    self
                }
            }

            #tool_check

            #[automatically_derived]
            impl #krate::Agent for #self_ty {
                type State = #state;
                type Trigger = #trigger;
                type Output = #output;
                const NAME: &'static str = #name;
                const EMITS: &'static [&'static str] = &[#(#emits_names),*];

                #model
                #when
                #tools
                #max_turns
                #system
                #messages
                #images
                #reasoning
                #reply

                fn prompt(
                    &self,
                    state: &Self::State,
                    trigger: &Self::Trigger,
                ) -> ::std::string::String {
                    #prompt_call
                }

                fn on_output(
                    &self,
                    output: Self::Output,
                    #trigger_param: &Self::Trigger,
                ) -> #krate::Emit {
                    #on_output_body
                }
            }

            fn assert_output<T: #krate::StructuredOutput>() {}
            #assert_output
        };
    }
}

/// `fn tools` of the generated `impl Agent`, and the helper trait that checks the entries of
/// `tools = [...]` are tools.
fn generate_tools(
    self_ty: &Type,
    tools: &Tools,
    krate: &TokenStream,
) -> (Option<TokenStream>, TokenStream) {
    let arc_dyn_tool = quote!(::std::sync::Arc<dyn #krate::Tool>);
    match tools {
        Tools::None => (None, TokenStream::new()),
        // Spanned on the return type: one that is not `Vec<Arc<dyn Tool>>` is reported there.
        Tools::Method(span) => {
            let value = quote_spanned!(*span=> tools);
            let method = quote! {
                fn tools(&self) -> ::std::vec::Vec<#arc_dyn_tool> {
                    let #value = <#self_ty>::tools(self);
                    #value
                }
            };
            (Some(method), TokenStream::new())
        }
        Tools::List(exprs) => {
            // Each entry is spanned on itself: one that is not a tool is reported there.
            let entries = exprs.iter().map(|expr| {
                quote_spanned! {expr.span()=>
                    IsTool::into_tool(#expr)
                }
            });
            let method = quote! {
                fn tools(&self) -> ::std::vec::Vec<#arc_dyn_tool> {
                    ::std::vec![#(#entries),*]
                }
            };
            let [message, label, note] = msg::agent_not_a_tool();
            let check = quote! {
                /// A value `tools = [...]` may list.
                #[diagnostic::on_unimplemented(message = #message, label = #label, note = #note)]
                trait IsTool {
                    fn into_tool(self) -> #arc_dyn_tool;
                }
                impl<T: #krate::Tool> IsTool for T {
                    fn into_tool(self) -> #arc_dyn_tool {
                        ::std::sync::Arc::new(self)
                    }
                }
            };
            (Some(method), check)
        }
    }
}
