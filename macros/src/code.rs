//! The fingerprint of the code a macro is given: the SHA-256 (first 16 hex digits) of its
//! tokens, doc comments and trailing commas left out. Tokens carry no whitespace and no
//! comments, so re-indenting, breaking lines or commenting code leaves the fingerprint as it
//! was (rustfmt's rewrites beyond whitespace and trailing commas, such as reordering `use`
//! items, do change it), and any change to what the code does — a handler's body, an agent's
//! prompt — changes it. `#[handler]` and `#[agent]` record it as `Handler::CODE` and
//! `Agent::CODE`, which go into the workflow's fingerprint (`workflow:started.code`).

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use sha2::{Digest, Sha256};

/// The fingerprint of `tokens`.
pub(crate) fn fingerprint(tokens: TokenStream) -> String {
    let mut text = String::new();
    write_tokens(tokens, &mut text);
    Sha256::digest(text.as_bytes())
        .iter()
        .take(8)
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// Writes `tokens` as text, one space between tokens, leaving out `#[doc = ...]` and
/// `#![doc = ...]` attributes (doc comments) and a list's trailing comma.
fn write_tokens(tokens: TokenStream, out: &mut String) {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let mut index = 0;
    while index < trees.len() {
        if let Some(skip) = doc_attribute(&trees[index..]) {
            index += skip;
            continue;
        }
        // A trailing comma (rustfmt adds one when it breaks a list over lines) is formatting.
        if index + 1 == trees.len()
            && matches!(&trees[index], TokenTree::Punct(comma) if comma.as_char() == ',')
        {
            break;
        }
        match &trees[index] {
            TokenTree::Group(group) => {
                let (open, close) = match group.delimiter() {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Brace => ("{", "}"),
                    Delimiter::Bracket => ("[", "]"),
                    Delimiter::None => ("", ""),
                };
                out.push_str(open);
                write_tokens(group.stream(), out);
                out.push_str(close);
            }
            other => out.push_str(&other.to_string()),
        }
        out.push(' ');
        index += 1;
    }
}

/// How many trees a doc attribute at the start of `trees` spans (`#` `[doc …]`, or `#` `!`
/// `[doc …]`), if one is there.
fn doc_attribute(trees: &[TokenTree]) -> Option<usize> {
    let TokenTree::Punct(hash) = trees.first()? else {
        return None;
    };
    if hash.as_char() != '#' {
        return None;
    }
    let (bang, at) = match trees.get(1)? {
        TokenTree::Punct(bang) if bang.as_char() == '!' => (1, 2),
        _ => (0, 1),
    };
    let TokenTree::Group(group) = trees.get(at)? else {
        return None;
    };
    let is_doc = group.delimiter() == Delimiter::Bracket
        && matches!(group.stream().into_iter().next(), Some(TokenTree::Ident(ident)) if ident == "doc");
    is_doc.then_some(2 + bang)
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::*;

    #[test]
    fn formatting_comments_and_docs_do_not_change_it_and_code_does() {
        let code = fingerprint(quote! {
            impl Refunds {
                fn refunded(&mut self, refund: &RefundIssued) { self.total += refund.amount; }
            }
        });
        let reformatted: TokenStream = "impl Refunds {\n    /// Adds the refund.\n    // a comment\n    fn refunded(\n        &mut self,\n        refund: &RefundIssued,\n    ) {\n        self.total += refund.amount;\n    }\n}"
            .parse()
            .expect("parses");
        assert_eq!(fingerprint(reformatted), code);
        let changed = fingerprint(quote! {
            impl Refunds {
                fn refunded(&mut self, refund: &RefundIssued) { self.total += refund.amount * 100; }
            }
        });
        assert_ne!(changed, code);
        assert_eq!(code.len(), 16);
    }
}
