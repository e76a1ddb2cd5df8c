//! The agent card of a served workflow (the `AgentCard` of A2A v1.0): what the clients fetch
//! at `<base>/.well-known/agent-card.json` before they talk to the agent, with the absolute URL
//! of its JSON-RPC endpoint built from the request's own `Host`.

use axum::http::{HeaderMap, header};
use serde_json::{Value, json};

use super::wire::VERSION;

/// The card of the target named `workflow` (a served workflow, or a `/v1` agent when `agent`
/// is set), whose JSON-RPC endpoint is `/a2a/<workflow>` on the host the request named;
/// `keyed` when the server asks for an API key (the card then says how to send it).
pub(crate) fn card(workflow: &str, agent: bool, headers: &HeaderMap, keyed: bool) -> Value {
    let url = format!("{}/a2a/{}", origin(headers), encode(workflow));
    let what = if agent { "agent" } else { "workflow" };
    let mut card = json!({
        "name": workflow,
        "description": format!("Open Harness {what} `{workflow}`: each message runs a turn of it, recorded in an append-only session log (a context is a session, a task a turn and the turns that answer its questions)."),
        "supportedInterfaces": [
            { "url": url, "protocolBinding": "JSONRPC", "protocolVersion": VERSION }
        ],
        "version": env!("CARGO_PKG_VERSION"),
        "capabilities": { "streaming": true, "pushNotifications": false, "extendedAgentCard": false },
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["text/plain", "application/json"],
        "skills": [{
            "id": workflow,
            "name": workflow,
            "description": format!("Runs the `{workflow}` {what}"),
            "tags": ["openharness"],
        }],
    });
    if keyed {
        card["securitySchemes"] =
            json!({ "bearer": { "httpAuthSecurityScheme": { "scheme": "Bearer" } } });
        card["securityRequirements"] = json!([{ "schemes": { "bearer": { "list": [] } } }]);
    }
    card
}

/// `http(s)://host[:port]` as the client reached this server: `X-Forwarded-Proto` and
/// `X-Forwarded-Host` (a proxy's) win over `Host`.
fn origin(headers: &HeaderMap) -> String {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(',').next())
            .map(str::trim)
            .filter(|v| !v.is_empty() && !v.contains(['/', ' ', '\\']))
    };
    let scheme = match text("x-forwarded-proto") {
        Some("https") => "https",
        _ => "http",
    };
    let host = text("x-forwarded-host")
        .or_else(|| text(header::HOST.as_str()))
        .unwrap_or("127.0.0.1");
    format!("{scheme}://{host}")
}

/// `name` as one URL path segment.
fn encode(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for byte in name.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_card_names_its_endpoint_on_the_host_the_client_reached() {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, "127.0.0.1:8080".parse().unwrap());
        let card = card("chat", false, &headers, false);
        assert_eq!(
            card["supportedInterfaces"][0]["url"],
            "http://127.0.0.1:8080/a2a/chat"
        );
        assert_eq!(card["supportedInterfaces"][0]["protocolVersion"], "1.0");
        assert_eq!(card["skills"][0]["id"], "chat");
        assert!(card.get("securitySchemes").is_none());
        headers.insert("x-forwarded-proto", "https".parse().unwrap());
        headers.insert("x-forwarded-host", "agents.example.com".parse().unwrap());
        let card = super::card("plan & run", false, &headers, true);
        assert_eq!(
            card["supportedInterfaces"][0]["url"],
            "https://agents.example.com/a2a/plan%20%26%20run"
        );
        assert_eq!(
            card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
            "Bearer"
        );
    }
}
