//! `otel export`: recorded sessions sent to an OpenTelemetry collector as GenAI spans, and the
//! live export `serve`, `start`, `run` and every other recording command turn on when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` is set.

use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;

use clap::Subcommand;
use openharness::Store;
use openharness::otel::{
    Collector, Endpoint, LiveExport, LiveOptions, OtelError, SpanOptions, export_sessions,
};

use crate::shared::parse_session;
use crate::{CliError, Context};

/// How long a command waits at its end for the live export to send what it still holds.
const SHUTDOWN: Duration = Duration::from_secs(10);

/// `otel …`
#[derive(Debug, Subcommand)]
pub(crate) enum OtelCommand {
    /// Send recorded sessions to an OpenTelemetry collector (OTLP over HTTP) as GenAI spans:
    /// each turn a trace, its agent calls, model calls and tool calls. Ids are derived from the
    /// log, so exporting a session again sends identical spans.
    Export {
        /// The collector's base URL (spans go to URL/v1/traces). Default:
        /// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, else OTEL_EXPORTER_OTLP_ENDPOINT.
        #[arg(long, value_name = "URL")]
        endpoint: Option<String>,
        /// Include content: prompts, outputs, tool arguments and results (off by default).
        #[arg(long)]
        content: bool,
        /// Mark every span `openharness.replay = true` (for sessions that re-ran a recording,
        /// so a backend does not count them as production traffic). Calls a cassette answered
        /// are marked whether or not this is given.
        #[arg(long)]
        replay: bool,
        /// The sessions to export.
        #[arg(required = true, value_name = "SESSION")]
        sessions: Vec<String>,
    },
}

pub(crate) async fn run(command: OtelCommand, context: &Context) -> Result<(), CliError> {
    match command {
        OtelCommand::Export {
            endpoint,
            content,
            replay,
            sessions,
        } => {
            let endpoint = match endpoint {
                Some(url) => Endpoint::base(&url),
                None => Endpoint::from_env().ok_or(OtelError::NoEndpoint)?,
            };
            let sessions = sessions
                .iter()
                .map(|id| parse_session(id))
                .collect::<Result<Vec<_>, _>>()?;
            let collector = Collector::new(&endpoint)?;
            let store = context.host().store();
            let report = export_sessions(
                store.as_ref(),
                &sessions,
                &collector,
                SpanOptions::default().content(content).replay(replay),
            )
            .await?;
            writeln!(
                context.out(),
                "{} spans of {} session(s) sent to {}",
                report.spans,
                report.sessions,
                endpoint.url()
            )?;
            Ok(())
        }
    }
}

/// When the environment names a collector, a live export over `store`: the store to record on,
/// and the export to shut down when the command ends.
pub(crate) fn live(
    store: Arc<dyn Store>,
) -> Result<(Arc<dyn Store>, Option<LiveExport>), CliError> {
    let Some(endpoint) = Endpoint::from_env() else {
        return Ok((store, None));
    };
    let live = LiveExport::start(store, Collector::new(&endpoint)?, LiveOptions::default());
    Ok((live.store(), Some(live)))
}

/// Flushes a live export at the end of a command; what it lost is logged (`tracing`).
pub(crate) async fn finish(live: Option<LiveExport>) {
    if let Some(live) = live {
        live.shutdown(SHUTDOWN).await;
    }
}
