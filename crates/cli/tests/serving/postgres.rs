//! A fresh PostgreSQL database for a test's `serve` processes, on the server
//! `OPENHARNESS_TEST_POSTGRES` names (`.ci/run` sets it); without it, or with it unusable
//! outside CI, the test says it skipped.
#![allow(dead_code)] // each test file uses what it needs

pub(crate) const POSTGRES_ENV: &str = "OPENHARNESS_TEST_POSTGRES";

/// The URL of a new, empty database named `oh_<prefix>_<uuid>`, or `None` after saying why
/// `test` skips PostgreSQL.
pub(crate) async fn fresh_database(test: &str, prefix: &str) -> Option<String> {
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
    let database = format!("oh_{prefix}_{}", uuid::Uuid::now_v7().simple());
    admin
        .batch_execute(&format!("CREATE DATABASE {database}"))
        .await
        .unwrap();
    Some(replace_dbname(&admin_url, &database))
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
