//! The table every suite prints: each figure beside a baseline measured in the same run, the
//! ratio between them, the goal it is held to, and whether it was met.

/// An error a suite may meet, from any thread.
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What a suite's steps return.
pub(crate) type Fallible<T> = Result<T, BoxError>;

/// One row of the report.
pub(crate) struct Row {
    pub(crate) what: String,
    pub(crate) measured: String,
    pub(crate) baseline: String,
    pub(crate) ratio: String,
    pub(crate) goal: &'static str,
    /// Whether the goal was met; `None` for a row shown for information, held to no goal
    /// (its `goal` reads `(info)`).
    pub(crate) met: Option<bool>,
}

/// A ratio as every table shows it: two decimals and an `x` (`1.23x`).
pub(crate) fn times(ratio: f64) -> String {
    format!("{ratio:.2}x")
}

/// Prints `rows` as one table on stdout.
pub(crate) fn print(rows: &[Row]) {
    println!(
        "{:<44} {:>26} {:>26} {:>12}  {:<12} result",
        "benchmark", "measured", "baseline (same run)", "ratio", "goal"
    );
    for row in rows {
        println!(
            "{:<44} {:>26} {:>26} {:>12}  {:<12} {}",
            row.what,
            row.measured,
            row.baseline,
            row.ratio,
            row.goal,
            match row.met {
                Some(true) => "ok",
                Some(false) => "MISSED",
                None => "-",
            }
        );
    }
}

/// What a suite's missed goal does to the process's exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Missed {
    /// A missed goal fails the process (suites whose goals gate a change).
    Fails,
    /// The table shows it; the process succeeds once the suite ran.
    Shown,
}

/// The two-worker tokio runtime every suite runs on; `Err` (said on stderr as
/// `bench <name>: …`) when it cannot start.
pub(crate) fn runtime(name: &str) -> Result<tokio::runtime::Runtime, std::process::ExitCode> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|err| {
            eprintln!("bench {name}: could not start tokio: {err}");
            std::process::ExitCode::FAILURE
        })
}

/// Runs a suite on [`runtime`] and prints its rows: success when it ran (and, with
/// [`Missed::Fails`], met every goal), a failure (said on stderr as `bench <name>: …`) when it
/// could not run or failed.
pub(crate) fn run_suite<F, E>(
    name: &str,
    missed: Missed,
    suite: impl FnOnce() -> F,
) -> std::process::ExitCode
where
    F: std::future::Future<Output = Result<Vec<Row>, E>>,
    E: std::fmt::Display,
{
    let runtime = match runtime(name) {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    match runtime.block_on(suite()) {
        Ok(rows) => {
            print(&rows);
            if missed == Missed::Fails && rows.iter().any(|row| row.met == Some(false)) {
                std::process::ExitCode::FAILURE
            } else {
                std::process::ExitCode::SUCCESS
            }
        }
        Err(err) => {
            eprintln!("bench {name}: {err}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The median of `values` (0 for none).
pub(crate) fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}
