//! `#[handler(Events)]`: checks the signature of every handler in an `impl` block (or an inline
//! module of functions), registers each under the event it takes, and generates
//! `impl Handler` as one exhaustive `match` over the event enum (two when a handler takes
//! `undo: &mut Undo<Self>`: `apply` passes it an `Undo` that records nothing,
//! `apply_undoable` the tape's). A missing handler is an error
//! naming the event, pointing at the attribute: the enum's `__openharness_handled` requires
//! `HandlesEvent<E>` of the state for every event `E`, and this macro implements it for each
//! event that has a handler. `Handler::CODE` is the fingerprint of the handlers' tokens
//! ([`crate::code`]).

use std::collections::HashMap;

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{
    Attribute, FnArg, Ident, Item, ItemImpl, ItemMod, Path, ReturnType, Signature, Type,
    parse_quote,
};

use crate::attr::{HandlerArgs, respan};
use crate::errors::{Errors, msg};
use crate::names;

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let args = HandlerArgs::parse(attr)?;
    match syn::parse2::<Item>(item)? {
        Item::Impl(item) => expand_impl(&args, item),
        Item::Mod(item) => expand_mod(&args, item),
        _ => Err(syn::Error::new(Span::call_site(), msg::HANDLER_ITEM)),
    }
}

/// One handler: the function to call for one variant of the event enum.
struct Route {
    /// The handler function.
    function: Ident,
    /// The variant: the last segment of the event parameter's type, with its span, so that an
    /// event outside the enum is reported on the parameter.
    variant: Ident,
    /// Whether it takes `undo: &mut Undo<Self>` after the event.
    takes_undo: bool,
    /// Whether it returns `()`.
    returns_unit: bool,
    /// Where errors about what it returns should point.
    return_span: Span,
    /// Its `#[cfg(...)]` attributes, repeated on its match arm.
    cfgs: Vec<Attribute>,
    /// The event type, as written, with the user's spans.
    event: Type,
}

/// Where the handlers are written.
#[derive(Clone, Copy, PartialEq)]
enum Form {
    /// Methods of the state: `fn on_x(&mut self, event: &X)`.
    Method,
    /// Functions in a module: `fn on_x(state: &mut State, event: &X)`.
    Function,
}

/// What a handler's signature says, once checked.
struct Checked<'a> {
    route: Route,
    /// The event type, as written (`PlanCreated` in `&PlanCreated`).
    event: &'a Type,
    /// The state type, for [`Form::Function`].
    state: Option<&'a Type>,
}

// ---- impl blocks ----------------------------------------------------------------------------

fn expand_impl(args: &HandlerArgs, item: ItemImpl) -> syn::Result<TokenStream> {
    let krate = args.krate.tokens();
    let code = crate::code::fingerprint(item.to_token_stream());
    let mut errors = Errors::new();
    if let Some((_, path, _)) = &item.trait_ {
        // Its methods are the trait's, not handlers: report only this.
        errors.spanned_by(path, msg::HANDLER_TRAIT_IMPL);
        return errors.finish().map(|()| TokenStream::new());
    }
    let generic = !item.generics.params.is_empty();
    if generic {
        errors.spanned_by(&item.generics, msg::HANDLER_GENERIC_IMPL);
    }
    let mut routes = Routes::default();
    for function in item.items.iter().filter_map(|item| match item {
        syn::ImplItem::Fn(function) => Some(function),
        _ => None,
    }) {
        if let Some(checked) = check(&function.sig, &function.attrs, Form::Method, &mut errors) {
            routes.add(checked, &mut errors);
        }
    }

    // Even with errors, `Handler` is implemented from the valid handlers (with a wildcard arm,
    // so the ones in error are not also reported missing): code using the state elsewhere
    // still compiles and the user sees only the errors above.
    let self_ty = &item.self_ty;
    let handler_impl = (!generic).then(|| {
        let apply = generate_apply(
            &krate,
            &args.events,
            args.partial || !errors.is_empty(),
            &routes.list,
            |function, span, undo| quote_spanned!(span=> Self::#function(self, event #undo)),
        );
        let handles = generate_handles(self_ty, &routes.list, &krate);
        quote! {
            #[automatically_derived]
            impl #krate::Handler for #self_ty {
                const CODE: &'static str = #code;
                #apply
            }
            #handles
        }
    });
    Ok(errors.emit_with(quote!(#item #handler_impl)))
}

// ---- modules of functions -------------------------------------------------------------------

fn expand_mod(args: &HandlerArgs, mut item: ItemMod) -> syn::Result<TokenStream> {
    let krate = args.krate.tokens();
    let code = crate::code::fingerprint(item.to_token_stream());
    let mut errors = Errors::new();
    let Some((_, items)) = &item.content else {
        return Err(syn::Error::new_spanned(
            &item.ident,
            msg::HANDLER_MOD_NOT_INLINE,
        ));
    };
    let mut routes = Routes::default();
    let mut state: Option<(&Type, &Ident)> = None;
    let mut functions = 0;
    for function in items.iter().filter_map(|item| match item {
        Item::Fn(function) => Some(function),
        _ => None,
    }) {
        functions += 1;
        let Some(checked) = check(&function.sig, &function.attrs, Form::Function, &mut errors)
        else {
            continue;
        };
        if let Some(this) = checked.state {
            match state {
                None => state = Some((this, &function.sig.ident)),
                Some((first, first_fn)) => {
                    let (first, this_text) = (names::display(first), names::display(this));
                    if first != this_text {
                        errors.spanned_by(
                            this,
                            msg::handler_state_mismatch(&first_fn.to_string(), &first, &this_text),
                        );
                        continue;
                    }
                }
            }
        }
        routes.add(checked, &mut errors);
    }
    if functions == 0 {
        errors.spanned_by(&item.ident, msg::HANDLER_MOD_EMPTY);
    }

    // As for impl blocks: implemented from the valid handlers even when some are wrong.
    if let Some((state, _)) = state {
        // The attribute's path was written in the parent module; the impl lives in this one.
        let events = from_parent(&args.events);
        let apply = generate_apply(
            &krate,
            &events,
            args.partial || !errors.is_empty(),
            &routes.list,
            |function, span, undo| quote_spanned!(span=> #function(self, event #undo)),
        );
        let handles = generate_handles(state, &routes.list, &krate);
        let handler_impl = quote! {
            #[automatically_derived]
            impl #krate::Handler for #state {
                const CODE: &'static str = #code;
                #apply
            }
            #handles
        };
        if let Some((_, items)) = &mut item.content {
            items.push(Item::Verbatim(handler_impl));
        }
    }
    Ok(errors.emit_with(item.into_token_stream()))
}

/// The same path, written from a child module: `Events` becomes `super::Events`,
/// `self::x::Events` becomes `super::x::Events`; absolute paths stay as they are.
fn from_parent(path: &Path) -> Path {
    let Some(first) = path.segments.first() else {
        return path.clone();
    };
    if path.leading_colon.is_some() || first.ident == "crate" {
        return path.clone();
    }
    let mut segments = path.segments.clone();
    if first.ident == "self" {
        segments = segments.into_iter().skip(1).collect();
    }
    let mut rebased: Path = parse_quote!(super);
    rebased.segments.extend(segments);
    rebased
}

// ---- shared: checks and generation ----------------------------------------------------------

/// The handlers found so far, one per event.
#[derive(Default)]
struct Routes {
    list: Vec<Route>,
    by_event: HashMap<String, Ident>,
}

impl Routes {
    /// Adds a handler, unless its event already has one. Handlers under different `#[cfg]`s
    /// are alternatives, not duplicates.
    fn add(&mut self, checked: Checked<'_>, errors: &mut Errors) {
        let event = checked.route.variant.to_string();
        let cfgs = &checked.route.cfgs;
        let key = format!("{event} {}", quote!(#(#cfgs)*));
        if let Some(first) = self.by_event.get(&key) {
            errors.spanned_by(
                checked.event,
                msg::handler_duplicate(&event, &first.to_string()),
            );
            return;
        }
        self.by_event.insert(key, checked.route.function.clone());
        self.list.push(checked.route);
    }
}

/// Checks one handler's signature, reporting every problem; `None` if there was one.
fn check<'a>(
    sig: &'a Signature,
    attrs: &[Attribute],
    form: Form,
    errors: &mut Errors,
) -> Option<Checked<'a>> {
    let reported = errors.len();
    if let Some(token) = &sig.asyncness {
        errors.spanned_by(token, msg::HANDLER_ASYNC);
    }
    if let Some(token) = &sig.unsafety {
        errors.spanned_by(token, msg::HANDLER_UNSAFE);
    }
    if let Some(abi) = &sig.abi {
        errors.spanned_by(abi, msg::HANDLER_ABI);
    }
    errors.refuse_generics(&sig.generics, msg::HANDLER_GENERIC);

    let params_span = sig.paren_token.span.join();
    let arity = match form {
        Form::Method => msg::HANDLER_ARITY,
        Form::Function => msg::HANDLER_FN_ARITY,
    };
    let mut inputs = sig.inputs.iter();
    let state = match (form, inputs.next()) {
        (Form::Method, Some(FnArg::Receiver(receiver))) => {
            match &*receiver.ty {
                Type::Reference(reference) if reference.mutability.is_some() => {}
                Type::Reference(_) => errors.spanned_by(receiver, msg::HANDLER_SHARED_SELF),
                _ => errors.spanned_by(receiver, msg::HANDLER_OWNED_SELF),
            }
            None
        }
        (Form::Method, _) => {
            errors.at(params_span, msg::HANDLER_NO_SELF);
            return None;
        }
        (Form::Function, Some(FnArg::Typed(param))) => match &*param.ty {
            Type::Reference(reference) if reference.mutability.is_some() => Some(&*reference.elem),
            other => {
                errors.spanned_by(other, msg::HANDLER_FN_STATE);
                None
            }
        },
        (Form::Function, Some(FnArg::Receiver(receiver))) => {
            errors.spanned_by(receiver, msg::HANDLER_FN_STATE);
            return None;
        }
        (Form::Function, None) => {
            errors.at(params_span, arity);
            return None;
        }
    };

    let mut rest = inputs.collect::<Vec<_>>();
    // An optional last parameter, `undo: &mut Undo<Self>`, records how to take the change back.
    let takes_undo = matches!(rest.as_slice(), [_, FnArg::Typed(param)] if is_undo(&param.ty));
    if takes_undo {
        rest.pop();
    }
    let event = match rest.as_slice() {
        [FnArg::Typed(param)] => &*param.ty,
        [] => {
            errors.at(params_span, arity);
            return None;
        }
        [first, extra @ ..] => {
            if extra.is_empty() {
                errors.spanned_by(first, arity);
            } else {
                errors.spanned_by(quote!(#(#extra),*), arity);
            }
            return None;
        }
    };
    let event = match event {
        Type::Reference(reference) if reference.mutability.is_some() => {
            let message = msg::handler_event_mut(&names::display(&reference.elem));
            errors.spanned_by(event, message);
            return None;
        }
        Type::Reference(reference) => &*reference.elem,
        by_value => {
            errors.spanned_by(
                by_value,
                msg::handler_event_by_value(&names::display(by_value)),
            );
            return None;
        }
    };
    let Some(variant) = names::type_ident(event) else {
        errors.spanned_by(event, msg::HANDLER_EVENT_NOT_NAMED);
        return None;
    };

    let (returns_unit, return_span) = match &sig.output {
        ReturnType::Default => (true, sig.ident.span()),
        ReturnType::Type(_, ty) => (
            matches!(&**ty, Type::Tuple(tuple) if tuple.elems.is_empty()),
            ty.span(),
        ),
    };
    let route = Route {
        function: sig.ident.clone(),
        takes_undo,
        variant: variant.clone(),
        event: event.clone(),
        returns_unit,
        return_span,
        cfgs: attrs
            .iter()
            .filter(|attr| attr.path().is_ident("cfg"))
            .cloned()
            .collect(),
    };
    if errors.len() > reported {
        return None;
    }
    Some(Checked {
        route,
        event,
        state,
    })
}

/// Whether `ty` is `&mut Undo<…>` (by the last segment of its path, so `openharness::Undo`
/// and an imported `Undo` both count).
fn is_undo(ty: &Type) -> bool {
    let Type::Reference(reference) = ty else {
        return false;
    };
    if reference.mutability.is_none() {
        return false;
    }
    matches!(&*reference.elem, Type::Path(path)
        if path.path.segments.last().is_some_and(|segment| segment.ident == "Undo"))
}

/// `HandlesEvent<Event> for State` for each handled event, under the handler's `#[cfg]`s: what
/// the event enum's `__openharness_handled` requires of every variant.
fn generate_handles(state: &Type, routes: &[Route], krate: &TokenStream) -> TokenStream {
    let impls = routes.iter().map(|Route { event, cfgs, .. }| {
        quote! {
            #(#cfgs)*
            #[automatically_derived]
            impl #krate::__private::HandlesEvent<#event> for #state {}
        }
    });
    quote!(#(#impls)*)
}

/// `type Events`, `fn apply` and, when a handler takes `undo: &mut Undo<Self>`,
/// `fn apply_undoable`: each one `match` over the event enum, one arm per handler.
///
/// Without `partial` the match has no wildcard arm, and `apply` first requires a handler for
/// every event (`Events::__openharness_handled::<Self>()`), spanned on the enum's path in the
/// attribute: each missing one is an error there naming the event. Each call carries the span of the handler's
/// return type, so a return type that is not `IntoEmit` is reported there.
fn generate_apply(
    krate: &TokenStream,
    events: &Path,
    partial: bool,
    routes: &[Route],
    call: impl Fn(&Ident, Span, TokenStream) -> TokenStream,
) -> TokenStream {
    let apply = generate_match(krate, events, partial, routes, Recording::Off, &call);
    // `apply_undoable` only when a handler records undos; otherwise the trait's default (the
    // change cannot be undone) is right.
    let apply_undoable = routes.iter().any(|route| route.takes_undo).then(|| {
        let body = generate_match(krate, events, partial, routes, Recording::On, &call);
        quote! {
            fn apply_undoable(
                &mut self,
                event: &#events,
                undo: &mut #krate::Undo<Self>,
            ) -> #krate::Emit {
                #body
            }
        }
    });
    // With `partial`, which events have a handler: a fold skips the others without calling
    // `apply`, and a tape steps back over them without copying the state.
    let handles = partial.then(|| {
        let arms = routes.iter().map(|Route { variant, cfgs, .. }| {
            quote!(#(#cfgs)* __OpenharnessEvents::#variant(_) => true,)
        });
        quote! {
            fn handles(event: &#events) -> bool {
                use #events as __OpenharnessEvents;
                match *event {
                    #(#arms)*
                    #[allow(unreachable_patterns)]
                    _ => false,
                }
            }
        }
    });
    quote! {
        type Events = #events;

        fn apply(&mut self, event: &#events) -> #krate::Emit {
            #apply
        }

        #apply_undoable

        #handles
    }
}

/// Which of the two generated methods a `match` is for.
#[derive(Clone, Copy, PartialEq)]
enum Recording {
    /// `apply`: handlers that take `undo` get one that records nothing.
    Off,
    /// `apply_undoable`: handlers that take `undo` get the caller's; the others say their
    /// change cannot be undone.
    On,
}

/// The body of `apply` or `apply_undoable`: one `match` over the event enum.
fn generate_match(
    krate: &TokenStream,
    events: &Path,
    partial: bool,
    routes: &[Route],
    recording: Recording,
    call: &impl Fn(&Ident, Span, TokenStream) -> TokenStream,
) -> TokenStream {
    // The last segment: the enum's name as the user wrote it (the others may have been added
    // by `from_parent`).
    let events_span = events
        .segments
        .last()
        .map_or_else(Span::call_site, |segment| segment.ident.span());
    let alias = Ident::new("__OpenharnessEvents", Span::call_site());
    let arms = routes.iter().map(|route| {
        let Route {
            function,
            variant,
            takes_undo,
            returns_unit,
            return_span,
            cfgs,
            ..
        } = route;
        // The function's name too, so the whole call expression is on the return type.
        let mut function = function.clone();
        function.set_span(*return_span);
        let (before, undo) = match (recording, takes_undo) {
            (Recording::Off, true) => (quote!(), quote!(, &mut #krate::Undo::off())),
            (Recording::Off, false) => (quote!(), quote!()),
            (Recording::On, true) => (quote!(), quote!(, undo)),
            (Recording::On, false) => (quote!(undo.unsupported();), quote!()),
        };
        let call = call(&function, *return_span, undo);
        let body = if *returns_unit {
            quote!({
                #before
                #call;
                #krate::Emit::none()
            })
        } else {
            let krate = respan(krate, *return_span);
            let into_emit =
                quote_spanned!(*return_span=> #krate::adapter::IntoEmit::into_emit(#call));
            quote!({ #before #into_emit })
        };
        quote! {
            #(#cfgs)*
            #alias::#variant(ref event) => #body
        }
    });
    let last = if partial {
        quote! {
            #[allow(unreachable_patterns)]
            _ => #krate::Emit::none(),
        }
    } else {
        // Never taken, and guarded arms do not count for exhaustiveness: this arm only keeps
        // rustc from suggesting the missing arm's code after the last handler, whose span is
        // in the user's attribute and makes that suggestion unreadable. Its different syntax
        // context (mixed-site) is what turns the suggestion off.
        let krate = respan(krate, Span::mixed_site());
        quote_spanned! {Span::mixed_site()=>
            _ if false => #krate::Emit::none(),
        }
    };
    let scrutinee = quote_spanned!(events_span=> *event);
    // Every event has a handler: one error per missing one, naming it, on the attribute. The
    // `match` below is then exhaustive (rustc skips its own check of a body with errors, so
    // its help, which suggests a wildcard arm, is not shown).
    // Checked once, in `apply`, so each missing handler is reported once.
    let all_handled = (!partial && recording == Recording::Off)
        .then(|| quote_spanned!(events_span=> #events::__openharness_handled::<Self>();));
    quote! {
        #all_handled
        use #events as #alias;
        match #scrutinee {
            #(#arms)*
            #last
        }
    }
}
