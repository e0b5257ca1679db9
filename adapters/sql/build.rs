//! Embeds the migration folders: writes `$OUT_DIR/migrations.rs` listing every
//! `NNNN_description.sql` of `migrations/sqlite` and `migrations/postgres` (version,
//! description, file). `src/migrations.rs` turns each list into an sqlx `Migrator`, exactly as
//! `sqlx::migrate!` would, without building sqlx's macros (and a second sqlx and SQLite) for it.

use std::{env, fmt::Write, fs, path::Path};

fn main() {
    let root = Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap()).join("../../migrations");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut out = String::new();
    for dialect in ["sqlite", "postgres"] {
        let dir = root.join(dialect);
        println!("cargo:rerun-if-changed={}", dir.display());
        let mut files: Vec<_> = fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "sql"))
            .collect();
        files.sort();
        writeln!(
            out,
            "pub(crate) const {}: &[(i64, &str, &str)] = &[",
            dialect.to_uppercase()
        )
        .unwrap();
        for path in files {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let (version, rest) = name
                .split_once('_')
                .unwrap_or_else(|| panic!("{name}: a migration is NNNN_description.sql"));
            let version: i64 = version
                .parse()
                .unwrap_or_else(|_| panic!("{name}: the version is a number"));
            let description = rest.trim_end_matches(".sql").replace('_', " ");
            let full = fs::canonicalize(&path).unwrap();
            writeln!(
                out,
                "    ({version}, {description:?}, include_str!({:?})),",
                full.display().to_string()
            )
            .unwrap();
        }
        out.push_str("];\n");
    }
    fs::write(
        Path::new(&env::var("OUT_DIR").unwrap()).join("migrations.rs"),
        out,
    )
    .unwrap();
}
