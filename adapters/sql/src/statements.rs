//! Every statement of both stores, checked against the schema its migrations build: the test
//! reads the stores' sources, takes each string literal handed to `sqlx::query*`, and prepares
//! it on a freshly migrated database of its dialect. A misspelt column, a wrong table or a
//! parameter of the wrong type fails here, before any scenario runs.
//!
//! This is what sqlx's `query!` macros would check at compile time; they are not used because
//! they need sqlx's `macros` feature, which builds sqlx and SQLite a second time for the build
//! host (about a minute of every cold build) and cannot serve two dialects from one crate.

use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// Statement literals found in one store's sources, with where they are.
struct Statements {
    found: Vec<(String, String)>,
    file: String,
}

impl<'ast> Visit<'ast> for Statements {
    fn visit_expr_call(&mut self, call: &'ast syn::ExprCall) {
        if let syn::Expr::Path(p) = &*call.func
            && let Some(last) = p.path.segments.last()
            && matches!(
                last.ident.to_string().as_str(),
                "query" | "query_as" | "query_scalar" | "query_with"
            )
            && p.path.segments.iter().any(|s| s.ident == "sqlx")
            && let Some(syn::Expr::Lit(lit)) = call.args.first()
            && let syn::Lit::Str(s) = &lit.lit
        {
            self.found.push((s.value(), self.file.clone()));
        }
        syn::visit::visit_expr_call(self, call);
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
    {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every statement literal of one store (`sqlite` or `postgres`). Fails when a statement is
/// built at run time (`AssertSqlSafe`): those could not be checked here.
fn statements_of(store: &str) -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src")
        .join(store);
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    files.sort();
    let mut all = Statements {
        found: Vec::new(),
        file: String::new(),
    };
    for file in files {
        let source = std::fs::read_to_string(&file).unwrap();
        let name = file
            .strip_prefix(env!("CARGO_MANIFEST_DIR"))
            .unwrap()
            .display()
            .to_string();
        assert!(
            !source.contains("AssertSqlSafe"),
            "{name} builds a statement at run time; write it as a literal so it is checked"
        );
        all.file = name;
        all.visit_file(&syn::parse_file(&source).unwrap());
    }
    all.found
}

#[tokio::test]
async fn every_sqlite_statement_prepares_against_the_migrated_schema() {
    use sqlx::Executor;
    let pool = sqlx::sqlite::SqlitePoolOptions::new()
        .max_connections(1)
        .connect("sqlite::memory:")
        .await
        .unwrap();
    crate::migrations::sqlite().run(&pool).await.unwrap();
    let statements = statements_of("sqlite");
    assert!(
        statements.len() >= 80,
        "only {} statements found",
        statements.len()
    );
    let mut conn = pool.acquire().await.unwrap();
    let failures: Vec<String> = {
        let mut out = Vec::new();
        for (sql, at) in &statements {
            if let Err(e) = conn
                .prepare(sqlx::SqlSafeStr::into_sql_str(sqlx::AssertSqlSafe(
                    sql.clone(),
                )))
                .await
            {
                out.push(format!("{at}: {e}\n    {sql}"));
            }
        }
        out
    };
    assert!(
        failures.is_empty(),
        "statements that do not prepare:\n{}",
        failures.join("\n")
    );
}

#[tokio::test]
async fn every_postgres_statement_prepares_against_the_migrated_schema() {
    use sqlx::{Connection, Executor};
    let server = std::env::var("SVC_TEST_POSTGRES_URL").expect(
        "SVC_TEST_POSTGRES_URL: a Postgres server for the store tests (scripts/test.sh starts one)",
    );
    let name = format!("svc_statements_{}", std::process::id());
    let mut admin = sqlx::PgConnection::connect(&server).await.unwrap();
    admin
        .execute(sqlx::AssertSqlSafe(format!(
            "DROP DATABASE IF EXISTS {name}"
        )))
        .await
        .unwrap();
    admin
        .execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .await
        .unwrap();
    let url = format!("{}/{name}", server.rsplit_once('/').unwrap().0);
    let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
    crate::migrations::postgres().run(&mut conn).await.unwrap();
    let statements = statements_of("postgres");
    assert!(
        statements.len() >= 80,
        "only {} statements found",
        statements.len()
    );
    let mut failures = Vec::new();
    for (sql, at) in &statements {
        if let Err(e) = conn
            .prepare(sqlx::SqlSafeStr::into_sql_str(sqlx::AssertSqlSafe(
                sql.clone(),
            )))
            .await
        {
            failures.push(format!("{at}: {e}\n    {sql}"));
        }
    }
    conn.close().await.unwrap();
    admin
        .execute(sqlx::AssertSqlSafe(format!("DROP DATABASE {name}")))
        .await
        .unwrap();
    assert!(
        failures.is_empty(),
        "statements that do not prepare:\n{}",
        failures.join("\n")
    );
}
