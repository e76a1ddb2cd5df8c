//! Typed parsing of the attribute arguments of the three macros:
//! `#[event("noun:verb", version = 2)]`, `#[handler(Events, partial)]` and
//! `#[agent(output = T, emits = [A, B], tools = [t1, t2], name = "...", model = "...", reply = field)]`.
//! Each also takes `crate = path`: where the generated code finds Open Harness (the facade,
//! `::openharness`, by default; `openharness_core` for the framework's own crates, as
//! `#[serde(crate = "...")]` does for serde).
//!
//! Parsing only checks syntax; what the arguments mean is checked by each macro. Where a
//! mistake does not stop parsing (an unknown key, a key given twice), it is recorded and parsing
//! goes on, so every mistake is reported at once.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{ToTokens, quote};
use syn::parse::{ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::{Expr, Ident, LitInt, LitStr, Path, Token, Type, bracketed};

use crate::errors::{Errors, msg};

/// The bare keywords the macros take.
mod kw {
    syn::custom_keyword!(partial);
    syn::custom_keyword!(version);
}

/// Where generated code finds Open Harness: `crate = path`, or the facade.
#[derive(Default)]
pub(crate) struct Krate(Option<Path>);

impl Krate {
    /// The path's tokens, to put before `::Event` and the like.
    pub(crate) fn tokens(&self) -> TokenStream {
        match &self.0 {
            Some(path) => path.to_token_stream(),
            None => quote!(::openharness),
        }
    }

    /// The path as text, for `#[serde(crate = "...")]`.
    pub(crate) fn text(&self) -> String {
        self.tokens().to_string().replace(' ', "")
    }

    /// Parses `crate = path` when it comes next; `false` (and nothing consumed) otherwise.
    fn parse_if_next(&mut self, input: ParseStream<'_>) -> syn::Result<bool> {
        if !input.peek(Token![crate]) {
            return Ok(false);
        }
        let _: Token![crate] = input.parse()?;
        let _: Token![=] = input.parse()?;
        let path = input
            .call(Path::parse_mod_style)
            .map_err(|err| syn::Error::new(err.span(), msg::CRATE_PATH))?;
        self.0 = Some(path);
        Ok(true)
    }
}

/// `tokens` (a crate path) with every token, inside groups too, spanned at `span`: for
/// generated code spanned on the user's tokens, where a path spanned elsewhere would add notes
/// pointing at the attribute.
pub(crate) fn respan(tokens: &TokenStream, span: Span) -> TokenStream {
    tokens
        .clone()
        .into_iter()
        .map(|mut token| {
            if let TokenTree::Group(group) = &token {
                let mut inner =
                    proc_macro2::Group::new(group.delimiter(), respan(&group.stream(), span));
                inner.set_span(span);
                token = TokenTree::Group(inner);
            } else {
                token.set_span(span);
            }
            token
        })
        .collect()
}

/// `#[event]`, `#[event("noun:verb")]`, either with `version = N` and `crate = path`.
pub(crate) struct EventArgs {
    /// The explicit name, if one was written.
    pub(crate) name: Option<LitStr>,
    /// The version of the event's shape, if one was written (`version = N`).
    pub(crate) version: Option<LitInt>,
    /// Where Open Harness is.
    pub(crate) krate: Krate,
}

impl EventArgs {
    pub(crate) fn parse(attr: TokenStream) -> syn::Result<Self> {
        let parser = |input: ParseStream<'_>| {
            let mut args = Self {
                name: None,
                version: None,
                krate: Krate::default(),
            };
            if input.peek(LitStr) {
                args.name = Some(input.parse()?);
                if !input.is_empty() {
                    let _: Token![,] = input.parse()?;
                }
            }
            while !input.is_empty() {
                if !args.krate.parse_if_next(input)? {
                    if !input.peek(kw::version) {
                        return Err(input.error(msg::EVENT_ARGS));
                    }
                    let _: kw::version = input.parse()?;
                    let _: Token![=] = input.parse()?;
                    let version: LitInt = input
                        .parse()
                        .map_err(|err| syn::Error::new(err.span(), msg::EVENT_VERSION))?;
                    match version.base10_parse::<u32>() {
                        Ok(n) if n >= 1 => args.version = Some(version),
                        _ => return Err(syn::Error::new(version.span(), msg::EVENT_VERSION)),
                    }
                }
                if !input.is_empty() {
                    let _: Token![,] = input.parse()?;
                }
            }
            Ok(args)
        };
        parser.parse2(attr)
    }
}

/// `#[handler(Events)]` or `#[handler(Events, partial)]`.
pub(crate) struct HandlerArgs {
    /// The workflow's event enum.
    pub(crate) events: Path,
    /// Whether events without a handler are ignored (instead of a compile error).
    pub(crate) partial: bool,
    /// Where Open Harness is.
    pub(crate) krate: Krate,
}

impl HandlerArgs {
    pub(crate) fn parse(attr: TokenStream) -> syn::Result<Self> {
        if attr.is_empty() {
            return Err(syn::Error::new(
                Span::call_site(),
                msg::HANDLER_MISSING_EVENTS,
            ));
        }
        let parser = |input: ParseStream<'_>| {
            let events: Path = input
                .parse()
                .map_err(|err| syn::Error::new(err.span(), msg::HANDLER_MISSING_EVENTS))?;
            let mut partial = false;
            let mut krate = Krate::default();
            let mut errors = Errors::new();
            while !input.is_empty() {
                let _: Token![,] = input.parse()?;
                if input.is_empty() {
                    break;
                }
                if krate.parse_if_next(input)? {
                    continue;
                }
                if input.peek(kw::partial) {
                    let _: kw::partial = input.parse()?;
                    partial = true;
                } else {
                    let option: Ident = input.parse()?;
                    errors.spanned_by(&option, msg::handler_unknown_option(&option.to_string()));
                }
            }
            errors.finish()?;
            Ok(Self {
                events,
                partial,
                krate,
            })
        };
        parser.parse2(attr)
    }
}

/// `#[agent(output = T, emits = [A, B], tools = [t1, t2], name = "planner", model = "...")]`.
#[derive(Default)]
pub(crate) struct AgentArgs {
    /// `output = T`: the structured output type.
    pub(crate) output: Option<Type>,
    /// `emits = [A, B]`: the events `on_output` may emit.
    pub(crate) emits: Option<Vec<Type>>,
    /// `tools = [t1, t2]`: the tools the model may call.
    pub(crate) tools: Option<ToolsArg>,
    /// `name = "..."`: the agent's name.
    pub(crate) name: Option<LitStr>,
    /// `model = "..."`: the model to ask for.
    pub(crate) model: Option<LitStr>,
    /// `reply = field` (or `reply = "jsonName"`): the output field that is the chat reply,
    /// as its JSON name, spanned on the user's token.
    pub(crate) reply: Option<LitStr>,
    /// `crate = path`: where Open Harness is.
    pub(crate) krate: Krate,
}

/// The keys `#[agent(...)]` takes (besides `crate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AgentKey {
    Output,
    Emits,
    Tools,
    Name,
    Model,
    Reply,
}

impl AgentKey {
    /// Each key as written.
    const ALL: [(&'static str, Self); 6] = [
        ("output", Self::Output),
        ("emits", Self::Emits),
        ("tools", Self::Tools),
        ("name", Self::Name),
        ("model", Self::Model),
        ("reply", Self::Reply),
    ];

    /// The key `ident` spells, if it is one.
    fn of(ident: &Ident) -> Option<Self> {
        Self::ALL
            .iter()
            .find(|(text, _)| ident == text)
            .map(|&(_, key)| key)
    }
}

impl AgentArgs {
    /// Parses the arguments, recording in `errors` every mistake that does not stop parsing.
    pub(crate) fn parse(attr: TokenStream, errors: &mut Errors) -> syn::Result<Self> {
        let parser = |input: ParseStream<'_>| {
            let mut args = Self::default();
            while !input.is_empty() {
                args.parse_one(input, errors)?;
                if input.is_empty() {
                    break;
                }
                let _: Token![,] = input.parse()?;
            }
            Ok(args)
        };
        parser.parse2(attr)
    }

    /// Parses one `key = value`.
    fn parse_one(&mut self, input: ParseStream<'_>, errors: &mut Errors) -> syn::Result<()> {
        if self.krate.parse_if_next(input)? {
            return Ok(());
        }
        let key: Ident = input.parse()?;
        let _: Token![=] = input.parse()?;
        let name = key.to_string();
        let duplicate = match AgentKey::of(&key) {
            Some(AgentKey::Output) => {
                let output: Type = input.parse()?;
                self.output.replace(output).is_some()
            }
            Some(AgentKey::Emits) => match parse_emits(input) {
                Ok(emits) => self.emits.replace(emits).is_some(),
                Err(err) => {
                    errors.push(err);
                    skip_value(input)?;
                    // Given, if badly: do not also report it missing.
                    self.emits.get_or_insert_with(Vec::new);
                    false
                }
            },
            Some(AgentKey::Tools) if !input.peek(syn::token::Bracket) => {
                // Spanned on the whole value, `WeatherTool::new()` say, not its first token.
                let value = take_value(input)?;
                errors.spanned_by(value, msg::AGENT_TOOLS_LIST);
                false
            }
            Some(AgentKey::Tools) => {
                let tools = parse_tools(input)?;
                let key = key.clone();
                self.tools.replace(ToolsArg { key, tools }).is_some()
            }
            Some(which @ (AgentKey::Name | AgentKey::Model)) => {
                let is_name = which == AgentKey::Name;
                let message = if is_name {
                    msg::AGENT_NAME_STRING
                } else {
                    msg::AGENT_MODEL_STRING
                };
                if input.peek(LitStr) {
                    let value: LitStr = input.parse()?;
                    let text = value.value();
                    if text.is_empty() || (is_name && text.contains(char::is_whitespace)) {
                        errors.spanned_by(&value, message);
                    }
                    let slot = if is_name {
                        &mut self.name
                    } else {
                        &mut self.model
                    };
                    slot.replace(value).is_some()
                } else {
                    errors.at(input.span(), message);
                    skip_value(input)?;
                    false
                }
            }
            Some(AgentKey::Reply) if input.peek(LitStr) => {
                let value: LitStr = input.parse()?;
                if value.value().is_empty() {
                    errors.spanned_by(&value, msg::AGENT_REPLY_FIELD);
                }
                self.reply.replace(value).is_some()
            }
            Some(AgentKey::Reply) if input.peek(Ident) => {
                let field: Ident = input.parse()?;
                let json_name = field.to_string();
                let json_name = json_name.strip_prefix("r#").unwrap_or(&json_name);
                let value = LitStr::new(json_name, field.span());
                self.reply.replace(value).is_some()
            }
            Some(AgentKey::Reply) => {
                errors.at(input.span(), msg::AGENT_REPLY_FIELD);
                skip_value(input)?;
                false
            }
            None => {
                errors.spanned_by(&key, msg::agent_unknown_key(&name));
                skip_value(input)?;
                false
            }
        };
        if duplicate {
            errors.spanned_by(&key, msg::agent_duplicate_key(&name));
        }
        Ok(())
    }
}

/// `[A, B, ...]`.
fn parse_emits(input: ParseStream<'_>) -> syn::Result<Vec<Type>> {
    if !input.peek(syn::token::Bracket) {
        return Err(input.error(msg::AGENT_EMITS_LIST));
    }
    let content;
    bracketed!(content in input);
    let types = Punctuated::<Type, Token![,]>::parse_terminated(&content)?;
    Ok(types.into_iter().collect())
}

/// `tools = [t1, t2]`: the key (for messages about it) and the expressions, each a value
/// that implements `Tool`.
pub(crate) struct ToolsArg {
    pub(crate) key: Ident,
    pub(crate) tools: Vec<Expr>,
}

/// `[t1, t2, ...]`: expressions.
fn parse_tools(input: ParseStream<'_>) -> syn::Result<Vec<Expr>> {
    let content;
    bracketed!(content in input);
    let tools = Punctuated::<Expr, Token![,]>::parse_terminated(&content)?;
    Ok(tools.into_iter().collect())
}

/// Skips the tokens of a value up to the next top-level comma.
fn skip_value(input: ParseStream<'_>) -> syn::Result<()> {
    take_value(input).map(drop)
}

/// The tokens of a value, up to the next top-level comma.
fn take_value(input: ParseStream<'_>) -> syn::Result<TokenStream> {
    let mut value = TokenStream::new();
    while !input.is_empty() && !input.peek(Token![,]) {
        let token: TokenTree = input.parse()?;
        value.extend([token]);
    }
    Ok(value)
}
