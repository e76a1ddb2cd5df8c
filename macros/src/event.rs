//! `#[event]`: on a struct, one typed event (serde and schemars derives, the checked
//! `noun:verb` name, `impl Event`); on an enum, the workflow's event set (tuple variants,
//! `From` conversions, `impl EventSet` decoding by name, compile-time checks that every
//! variant is an event and that no two share a name).

use std::collections::HashSet;

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{
    Attribute, Fields, Generics, Ident, Item, ItemEnum, ItemStruct, LitInt, LitStr, Type, TypePath,
};

use crate::attr::EventArgs;
use crate::errors::{Errors, msg};
use crate::names::{self, Underivable};

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let args = EventArgs::parse(attr)?;
    match syn::parse2::<Item>(item)? {
        Item::Struct(item) => Ok(expand_struct(&args, item)),
        Item::Enum(item) => expand_enum(&args, item),
        Item::Union(item) => Err(syn::Error::new_spanned(item.union_token, msg::EVENT_UNION)),
        _ => Err(syn::Error::new(Span::call_site(), msg::EVENT_ITEM)),
    }
}

// ---- one event ------------------------------------------------------------------------------

/// The struct always gets its derives, even when the name is wrong, so that the only errors
/// the user sees are ours (and not, say, "cannot find attribute `serde`" on their fields).
fn expand_struct(args: &EventArgs, item: ItemStruct) -> TokenStream {
    let mut errors = Errors::new();
    check_no_generics(&item.generics, msg::EVENT_GENERIC, &mut errors);
    let generic = !errors.is_empty();
    let name = event_name(args, &item.ident, &mut errors);
    let krate = args.krate.tokens();
    let serde_crate = format!("{}::__private::serde", args.krate.text());
    let schemars_crate = format!("{}::__private::schemars", args.krate.text());

    let derived = quote! {
        #[derive(
            #krate::__private::serde::Serialize,
            #krate::__private::serde::Deserialize,
            #krate::__private::schemars::JsonSchema
        )]
        #[serde(crate = #serde_crate)]
        #[schemars(crate = #schemars_crate)]
        #item
    };
    // Implemented even when the name is wrong, so uses of the event elsewhere do not add
    // "is not an event" errors to the one about its name.
    let event_impl = (!generic).then(|| {
        let ident = &item.ident;
        let versioned = args
            .version
            .as_ref()
            .map(|version| versioned(version, &krate));
        quote! {
            #[automatically_derived]
            impl #krate::Event for #ident {
                const NAME: &'static str = #name;
                #versioned
            }
        }
    });
    let upcast_checks = (!generic)
        .then(|| {
            args.version
                .as_ref()
                .map(|version| upcast_checks(&item.ident, &name, version, &krate))
        })
        .flatten();
    errors.emit_with(quote!(#derived #event_impl #upcast_checks))
}

/// `VERSION`, and for a version above 1 the `read_recorded` that upcasts older versions,
/// spanned on the version so a missing `Upcast` is reported there.
fn versioned(version: &LitInt, krate: &TokenStream) -> TokenStream {
    let number = version.base10_parse::<u32>().unwrap_or(1);
    if number <= 1 {
        return quote!(
            const VERSION: u32 = 1;
        );
    }
    let json = quote!(#krate::__private::serde_json);
    let read = quote_spanned! {version.span()=>
        #krate::adapter::read_upcasting::<Self>(version, payload)
    };
    quote! {
        const VERSION: u32 = #version;
        fn read_recorded(
            version: u32,
            payload: &#json::Value,
        ) -> ::core::result::Result<#krate::Upcasted<Self>, #krate::adapter::DecodeError> {
            #read
        }
    }
}

/// For a version above 1: the previous version (`Upcast::Previous`) is recorded under the same
/// name, one version below. Checked at compile time.
fn upcast_checks(
    ident: &Ident,
    name: &LitStr,
    version: &LitInt,
    krate: &TokenStream,
) -> Option<TokenStream> {
    let number = version.base10_parse::<u32>().ok().filter(|n| *n > 1)?;
    let previous = quote!(<<#ident as #krate::Upcast>::Previous as #krate::Event>);
    let same_name = msg::upcast_other_name(&ident.to_string(), &name.value());
    let one_below = msg::upcast_not_one_below(&ident.to_string(), number);
    let below = number - 1;
    Some(quote_spanned! {version.span()=>
        const _: () = {
            if !#krate::__private::same_name(#previous::NAME, #name) {
                ::core::panic!(#same_name);
            }
            if #previous::VERSION != #below {
                ::core::panic!(#one_below);
            }
        };
    })
}

/// The checked name: the one written in the attribute, or the one derived from the type name.
fn event_name(args: &EventArgs, ident: &Ident, errors: &mut Errors) -> LitStr {
    match &args.name {
        Some(name) => {
            let value = name.value();
            if !names::is_event_name(&value) {
                let suggestion = names::suggest_event_name(&value);
                errors.spanned_by(name, msg::event_bad_name(&value, suggestion.as_deref()));
            }
            name.clone()
        }
        None => match names::event_name(&ident.to_string()) {
            Ok(derived) => LitStr::new(&derived, ident.span()),
            Err(Underivable::SingleWord { noun }) => {
                errors.spanned_by(ident, msg::event_single_word(&ident.to_string(), &noun));
                LitStr::new("", ident.span())
            }
            Err(Underivable::Invalid { derived }) => {
                errors.spanned_by(ident, msg::event_underivable(&ident.to_string(), &derived));
                LitStr::new("", ident.span())
            }
        },
    }
}

fn check_no_generics(generics: &Generics, message: &str, errors: &mut Errors) {
    if !generics.params.is_empty() {
        errors.spanned_by(generics, message);
    } else if let Some(where_clause) = &generics.where_clause {
        errors.spanned_by(where_clause, message);
    }
}

// ---- the event set --------------------------------------------------------------------------

/// One variant of an event set, as generated: `Ident(Ty)`.
struct Variant {
    attrs: Vec<Attribute>,
    ident: Ident,
    field_attrs: Vec<Attribute>,
    ty: Type,
}

fn expand_enum(args: &EventArgs, item: ItemEnum) -> syn::Result<TokenStream> {
    let mut errors = Errors::new();
    if let Some(name) = &args.name {
        errors.spanned_by(name, msg::EVENT_SET_NAMED);
    }
    if let Some(version) = &args.version {
        errors.spanned_by(version, msg::EVENT_SET_VERSION);
    }
    if !item.generics.params.is_empty() || item.generics.where_clause.is_some() {
        // Nothing sensible can be generated for a generic enum: report only this.
        check_no_generics(&item.generics, msg::EVENT_SET_GENERIC, &mut errors);
        return errors.finish().map(|()| TokenStream::new());
    }
    let variants = check_variants(&item, &mut errors);
    // The set is generated from the valid variants even when some are wrong, so the rest of
    // the program (handlers, agents) still compiles against it and the user sees the errors
    // above rather than a cascade.
    let generated = generate_set(&item, &variants, &args.krate.tokens());
    Ok(errors.emit_with(generated))
}

fn check_variants(item: &ItemEnum, errors: &mut Errors) -> Vec<Variant> {
    let mut variants = Vec::new();
    let mut seen = HashSet::new();
    for variant in &item.variants {
        if let Some((_, discriminant)) = &variant.discriminant {
            errors.spanned_by(discriminant, msg::EVENT_SET_DISCRIMINANT);
        }
        let (ty, field_attrs) = match &variant.fields {
            Fields::Unit => {
                let ty = Type::Path(TypePath {
                    qself: None,
                    path: variant.ident.clone().into(),
                });
                (ty, Vec::new())
            }
            Fields::Unnamed(fields) if fields.unnamed.len() == 1 => match fields.unnamed.first() {
                Some(field) => (field.ty.clone(), field.attrs.clone()),
                None => continue,
            },
            fields => {
                errors.spanned_by(fields, msg::EVENT_SET_FIELDS);
                continue;
            }
        };
        let written = names::display(&ty);
        match names::type_ident(&ty) {
            Some(ty_ident) if *ty_ident == variant.ident => {}
            Some(ty_ident) => {
                let message = msg::event_set_variant_name(
                    &variant.ident.to_string(),
                    &ty_ident.to_string(),
                    &written,
                );
                errors.spanned_by(&variant.ident, message);
                continue;
            }
            None => {
                errors.spanned_by(&ty, msg::event_set_not_a_type(&written));
                continue;
            }
        }
        if !seen.insert(variant.ident.to_string()) {
            errors.spanned_by(&variant.ident, msg::event_set_duplicate(&written));
            continue;
        }
        variants.push(Variant {
            attrs: variant.attrs.clone(),
            ident: variant.ident.clone(),
            field_attrs,
            ty,
        });
    }
    variants
}

fn generate_set(item: &ItemEnum, variants: &[Variant], krate: &TokenStream) -> TokenStream {
    let ItemEnum {
        attrs,
        vis,
        enum_token,
        ident,
        brace_token,
        ..
    } = item;
    let definitions = variants.iter().map(|v| {
        let Variant {
            attrs,
            ident,
            field_attrs,
            ty,
        } = v;
        // Spanned on the variant, so lints about it (`missing_docs`, say) point there.
        quote_spanned!(ident.span()=> #(#attrs)* #ident(#(#field_attrs)* #ty))
    });
    // The user's braces, so the enum's span (in "defined here" notes) is the user's too.
    let mut body = TokenStream::new();
    brace_token.surround(&mut body, |body| body.extend(quote!(#(#definitions,)*)));
    let froms = variants.iter().map(|Variant { ident: v, ty, .. }| {
        quote! {
            #[automatically_derived]
            impl ::core::convert::From<#ty> for #ident {
                fn from(event: #ty) -> Self {
                    Self::#v(event)
                }
            }
        }
    });
    let helper = generate_helper(ident, krate);
    let handled = generate_handled(ident, variants, krate);
    let event_set = generate_event_set(ident, variants, krate);
    let checks = generate_checks(ident, variants, krate);
    quote! {
        #(#attrs)*
        #vis #enum_token #ident #body
        #(#froms)*
        #helper
        #handled
        #event_set
        #checks
    }
}

/// The one place the generated code requires `E: Event` of a variant's type.
///
/// Every use of a variant's type (its name, decoding, encoding, the checks) goes through this
/// function, spanned on the type, so a type that is not an event gives exactly one error, the
/// core's "`Foo` is not an event", on the variant, instead of one per use.
fn generate_helper(ident: &Ident, krate: &TokenStream) -> TokenStream {
    let json = quote!(#krate::__private::serde_json);
    let result = quote!(::core::result::Result);
    quote! {
        impl #ident {
            #[doc(hidden)]
            #[allow(clippy::type_complexity)]
            const fn __openharness_event<E: #krate::Event>() -> (
                &'static str,
                fn(&#json::Value) -> #result<E, #json::Error>,
                fn(&E) -> #result<#json::Value, #json::Error>,
                fn(u32, &#json::Value) -> #result<#krate::Upcasted<E>, #krate::adapter::DecodeError>,
                u32,
            ) {
                fn decode<E: #krate::Event>(
                    payload: &#json::Value,
                ) -> #result<E, #json::Error> {
                    <E as #krate::__private::serde::Deserialize>::deserialize(payload)
                }
                fn encode<E: #krate::Event>(
                    event: &E,
                ) -> #result<#json::Value, #json::Error> {
                    #json::to_value(event)
                }
                (
                    E::NAME,
                    decode::<E>,
                    encode::<E>,
                    <E as #krate::Event>::read_recorded,
                    <E as #krate::Event>::VERSION,
                )
            }
        }
    }
}

/// `Set::__openharness_handled::<State>()`, which `#[handler(Set)]` calls: it requires the
/// state to have a handler for every variant (`HandlesEvent<Ty>`, which the handler macro
/// implements for each event it handles), so each missing handler is one error that names the
/// event and says how to add it, instead of rustc's non-exhaustive `match`, whose help suggests
/// a wildcard arm. A variant under `#[cfg]` is left to the `match`.
fn generate_handled(ident: &Ident, variants: &[Variant], krate: &TokenStream) -> TokenStream {
    let bounds = variants
        .iter()
        .filter(|variant| {
            !variant
                .attrs
                .iter()
                .any(|attr| attr.path().is_ident("cfg") || attr.path().is_ident("cfg_attr"))
        })
        .map(|Variant { ty, .. }| quote!(#krate::__private::HandlesEvent<#ty>));
    quote! {
        impl #ident {
            /// Compiles only if `S` handles every event of this enum (unused by a partial handler).
            #[doc(hidden)]
            #[allow(unreachable_pub, dead_code)]
            pub const fn __openharness_handled<S: ?::core::marker::Sized #(+ #bounds)*>() {}
        }
    }
}

/// `Set::__openharness_event::<Ty>()`, spanned on the user's type.
fn event_of(set: &Ident, ty: &Type) -> TokenStream {
    quote_spanned!(ty.span()=> #set::__openharness_event::<#ty>())
}

fn generate_event_set(ident: &Ident, variants: &[Variant], krate: &TokenStream) -> TokenStream {
    let json = quote!(#krate::__private::serde_json);
    let result = quote!(::core::result::Result);
    let events: Vec<_> = variants.iter().map(|v| event_of(ident, &v.ty)).collect();
    let idents: Vec<_> = variants.iter().map(|v| &v.ident).collect();

    let decode_versioned = if variants.is_empty() {
        quote! {
            let _ = (name, version, payload);
            #result::Ok(#krate::adapter::Decoded::Unknown)
        }
    } else {
        quote! {
            #(
                if name == #events.0 {
                    let (event, splits) = (#events.3)(version, payload)?.into_parts();
                    return #krate::adapter::decoded_with_splits(name, Self::#idents(event), splits);
                }
            )*
            #result::Ok(#krate::adapter::Decoded::Unknown)
        }
    };
    let (decode, to_payload) = if variants.is_empty() {
        (
            quote! {
                let _ = (name, payload);
                #result::Ok(#krate::adapter::Decoded::Unknown)
            },
            quote!(match *self {}),
        )
    } else {
        (
            quote! {
                #(
                    if name == #events.0 {
                        return #result::Ok(#krate::adapter::Decoded::Known(
                            Self::#idents((#events.1)(payload)?),
                        ));
                    }
                )*
                #result::Ok(#krate::adapter::Decoded::Unknown)
            },
            quote! {
                match *self {
                    #(Self::#idents(ref event) => (#events.2)(event),)*
                }
            },
        )
    };

    quote! {
        #[automatically_derived]
        impl #krate::EventSet for #ident {
            const NAMES: &'static [&'static str] = &[#(#events.0),*];

            fn name(&self) -> &'static str {
                match *self {
                    #(Self::#idents(_) => #events.0,)*
                }
            }

            fn decode(
                name: &str,
                payload: &#json::Value,
            ) -> #result<#krate::adapter::Decoded<Self>, #json::Error> {
                #decode
            }

            fn decode_versioned(
                name: &str,
                version: u32,
                payload: &#json::Value,
            ) -> #result<#krate::adapter::Decoded<Self>, #krate::adapter::DecodeError> {
                #decode_versioned
            }

            #[allow(unused_variables)]
            fn version_of(name: &str) -> ::core::option::Option<u32> {
                #(
                    if name == #events.0 {
                        return ::core::option::Option::Some(#events.4);
                    }
                )*
                ::core::option::Option::None
            }

            fn to_payload(&self) -> #result<#json::Value, #json::Error> {
                #to_payload
            }
        }
    }
}

/// Compile-time checks: every variant holds an event (reported on the variant's type, with the
/// core's "`Foo` is not an event" message), and no two events share a name (which would make
/// decoding ambiguous).
fn generate_checks(set: &Ident, variants: &[Variant], krate: &TokenStream) -> TokenStream {
    if variants.is_empty() {
        return TokenStream::new();
    }
    let assertions = variants.iter().map(|v| {
        let event = event_of(set, &v.ty);
        quote_spanned!(v.ty.span()=> let _ = #event;)
    });
    let mut distinct = Vec::new();
    for (i, first) in variants.iter().enumerate() {
        for second in variants.iter().skip(i + 1) {
            let message = msg::event_set_same_name(
                &set.to_string(),
                &names::display(&first.ty),
                &names::display(&second.ty),
            );
            let (a, b) = (event_of(set, &first.ty), event_of(set, &second.ty));
            distinct.push(quote_spanned! {second.ty.span()=>
                if #krate::__private::same_name(#a.0, #b.0) {
                    ::core::panic!(#message);
                }
            });
        }
    }
    quote! {
        const _: () = {
            #(#assertions)*
            #(#distinct)*
        };
    }
}
