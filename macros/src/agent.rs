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
use syn::{Expr, FnArg, ImplItem, ImplItemFn, Item, ItemImpl, LitStr, PatType, ReturnType, Type};

use crate::attr::{AgentArgs, ToolsArg};
use crate::errors::{Errors, msg};
use crate::names;

mod check;
use check::*;

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let mut errors = Errors::new();
    let attr_tokens = attr.clone();
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
    // The agent's code: its arguments and its methods (prompt, on_output, ...).
    let code = crate::code::fingerprint(quote!(#attr_tokens #item));
    match agent {
        Some(agent) => Ok(generate(&item, &agent, &code)),
        // `check` returns `None` only after reporting an error.
        None => Err(syn::Error::new(Span::call_site(), msg::AGENT_ITEM)),
    }
}

fn generate(item: &ItemImpl, agent: &Checked<'_>, code: &str) -> TokenStream {
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
                const CODE: &'static str = #code;

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
