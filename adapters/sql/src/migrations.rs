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

/// Whether every migration of `migrator` is among `applied` (version, success, checksum),
/// successfully and with the same checksum. Versions applied beyond the build's (a newer
/// release rolling out beside this one) do not count against it.
pub(crate) fn all_applied(migrator: &Migrator, applied: &[(i64, bool, Vec<u8>)]) -> bool {
    migrator.iter().all(|m| {
        applied
            .iter()
            .any(|(v, ok, sum)| *v == m.version && *ok && sum.as_slice() == &*m.checksum)
    })
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

    #[test]
    fn current_means_every_known_migration_applied_unchanged() {
        let m = super::sqlite();
        let applied: Vec<(i64, bool, Vec<u8>)> = m
            .iter()
            .map(|x| (x.version, true, x.checksum.to_vec()))
            .collect();
        assert!(super::all_applied(&m, &applied));
        let mut newer = applied.clone();
        newer.push((9_999, true, vec![1]));
        assert!(super::all_applied(&m, &newer), "newer versions are fine");
        assert!(!super::all_applied(&m, &applied[..applied.len() - 1]));
        let mut failed = applied.clone();
        failed[0].1 = false;
        assert!(!super::all_applied(&m, &failed));
        let mut changed = applied;
        changed[0].2 = vec![0];
        assert!(!super::all_applied(&m, &changed));
        assert!(!super::all_applied(&m, &[]));
    }
}
