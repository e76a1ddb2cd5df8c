//! A fresh PostgreSQL database for a test's `serve` processes, on the server
//! `OPENHARNESS_TEST_POSTGRES` names (`.ci/run` sets it), dropped when the test is done with
//! it; without the variable, or with it unusable outside CI, the test says it skipped.
#![allow(dead_code)] // each test file uses what it needs

pub(crate) const POSTGRES_ENV: &str = "OPENHARNESS_TEST_POSTGRES";

/// A database of its own for one test: `url` names it. Dropping this drops the database, with
/// any connection still open to it, so a test leaves none behind, even one that fails.
pub(crate) struct FreshDatabase {
    /// The database's URL, for `--store`.
    pub(crate) url: String,
    admin_url: String,
    name: String,
}

impl Drop for FreshDatabase {
    fn drop(&mut self) {
        let (admin_url, name) = (self.admin_url.clone(), self.name.clone());
        // A drop may run inside the test's runtime, which cannot be blocked on: a thread and a
        // runtime of its own.
        let dropped = std::thread::spawn(
            move || -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?;
                runtime.block_on(async {
                    let (admin, connection) =
                        tokio_postgres::connect(&admin_url, tokio_postgres::NoTls).await?;
                    tokio::spawn(connection);
                    admin
                        .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                        .await?;
                    Ok(())
                })
            },
        )
        .join();
        match dropped {
            Ok(Ok(())) => {}
            Ok(Err(err)) => eprintln!("the test database {} was not dropped: {err}", self.name),
            Err(_) => eprintln!("dropping the test database {} panicked", self.name),
        }
    }
}

/// A new, empty database named `oh_<prefix>_<uuid>`, or `None` after saying why `test` skips
/// PostgreSQL.
pub(crate) async fn fresh_database(test: &str, prefix: &str) -> Option<FreshDatabase> {
    let Ok(admin_url) = std::env::var(POSTGRES_ENV) else {
        eprintln!(
            "{test}: skipped on PostgreSQL: {POSTGRES_ENV} is not set (CI sets it; see .ci/run)"
        );
        return None;
    };
    let (admin, connection) = match tokio_postgres::connect(&admin_url, tokio_postgres::NoTls).await
    {
        Ok(connected) => connected,
        Err(err) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!(
                "{test}: {POSTGRES_ENV} is set and CI=true, but PostgreSQL is unreachable: {err}"
            )
        }
        Err(err) => {
            eprintln!("{test}: skipped on PostgreSQL: it is unreachable: {err}");
            return None;
        }
    };
    tokio::spawn(connection);
    let name = format!("oh_{prefix}_{}", uuid::Uuid::now_v7().simple());
    admin
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .unwrap();
    Some(FreshDatabase {
        url: replace_dbname(&admin_url, &name),
        admin_url,
        name,
    })
}

/// `url` (a URL or a `key=value` connection string) naming `database` instead.
pub(crate) fn replace_dbname(url: &str, database: &str) -> String {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let (base, query) = url
            .split_once('?')
            .map_or((url, None), |(b, q)| (b, Some(q)));
        let scheme_end = base.find("://").map_or(0, |i| i + 3);
        let path_start = base[scheme_end..].find('/').map(|i| scheme_end + i);
        let root = path_start.map_or(base, |i| &base[..i]);
        match query {
            Some(query) => format!("{root}/{database}?{query}"),
            None => format!("{root}/{database}"),
        }
    } else {
        format!("{url} dbname={database}")
    }
}
