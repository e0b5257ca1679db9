//! The migrations of each dialect, embedded at build time (`build.rs` lists the folders).

use std::borrow::Cow;

use sqlx::{
    SqlSafeStr,
    migrate::{Migration, MigrationType, Migrator},
};

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/migrations.rs"));
}

fn migrator(list: &'static [(i64, &'static str, &'static str)]) -> Migrator {
    Migrator::with_migrations(
        list.iter()
            .map(|(version, description, sql)| {
                Migration::new(
                    *version,
                    Cow::Borrowed(*description),
                    MigrationType::Simple,
                    sql.into_sql_str(),
                    sql.starts_with("-- no-transaction"),
                )
            })
            .collect(),
    )
}

pub(crate) fn sqlite() -> Migrator {
    migrator(embedded::SQLITE)
}

pub(crate) fn postgres() -> Migrator {
    migrator(embedded::POSTGRES)
}

#[cfg(test)]
mod tests {
    /// Both dialects have the same migrations, numbered without gaps.
    #[test]
    fn both_dialects_have_every_migration_in_order() {
        let numbers = |list: &[(i64, &str, &str)]| list.iter().map(|m| m.0).collect::<Vec<_>>();
        let sqlite = numbers(super::embedded::SQLITE);
        assert_eq!(sqlite, numbers(super::embedded::POSTGRES));
        assert_eq!(sqlite, (1..=sqlite.len() as i64).collect::<Vec<_>>());
        assert!(sqlite.len() >= 10);
    }
}
