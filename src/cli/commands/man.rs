//! `elench man [-o DIR]`: manual pages (roff) generated from the command-line definitions,
//! so they say exactly what `--help` says.

use crate::cli::failure::Failure;
use crate::cli::files::write_atomically;
use crate::cli::globals::Globals;
use crate::cli::output::Report;
use serde_json::json;
use std::path::Path;

#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write one page per command (elench.1, elench-status.1, elench-keys-generate.1, …)
    /// into DIR, made if it does not exist; without it, elench.1 goes to stdout in place of
    /// the report
    #[arg(short = 'o', long = "output-dir", visible_alias = "out", value_name = "DIR",
          value_parser = crate::cli::files::output_path)]
    pub out: Option<String>,
}

/// The roff of one page.
fn render(cmd: clap::Command) -> Result<Vec<u8>, Failure> {
    let mut buf = Vec::new();
    clap_mangen::Man::new(cmd)
        .render(&mut buf)
        .map_err(|e| Failure::Internal(format!("rendering a manual page: {e}")))?;
    Ok(buf)
}

/// Every page: the top command and each subcommand, nested ones included, named like git's
/// (`elench-keys-generate`).
fn pages(mut root: clap::Command) -> Result<Vec<(String, Vec<u8>)>, Failure> {
    root.build();
    let mut out = Vec::new();
    let mut stack = vec![("elench".to_owned(), root)];
    while let Some((name, cmd)) = stack.pop() {
        for sub in cmd.get_subcommands() {
            if sub.get_name() == "help" {
                continue;
            }
            let sub_name = format!("{name}-{}", sub.get_name());
            stack.push((sub_name.clone(), sub.clone().display_name(sub_name)));
        }
        out.push((format!("{name}.1"), render(cmd)?));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// `definition`: the whole command line's clap definition, which the dispatcher hands in.
pub fn run(a: ManArgs, g: &Globals, definition: clap::Command) -> Result<Report, Failure> {
    match a.out.as_deref() {
        None | Some("-") => {
            g.stdout_for_product("manual page")?;
            let mut root = definition;
            root.build();
            let page = render(root)?;
            crate::cli::files::product_to_stdout(&page)?;
            Ok(Report {
                stdout_taken: true,
                ..Report::default()
            })
        }
        Some(dir) => {
            let dir = Path::new(dir);
            // Made as `mkdir -p` would; something else already there is named.
            if let Err(e) = std::fs::create_dir_all(dir) {
                return Err(Failure::Io {
                    path: dir.display().to_string(),
                    message: format!("cannot make the directory: {e}"),
                });
            }
            if !dir.is_dir() {
                return Err(Failure::Io {
                    path: dir.display().to_string(),
                    message: "not a directory".into(),
                });
            }
            let pages = pages(definition)?;
            let mut written = Vec::with_capacity(pages.len());
            for (name, bytes) in &pages {
                let path = dir.join(name);
                write_atomically(&path, bytes)?;
                written.push(path.display().to_string());
            }
            Ok(Report::new(
                json!({"pages": written, "effect": "created"}),
                format!(
                    "wrote {} manual pages to {} (read one with `man -l {}`)\n",
                    written.len(),
                    dir.display(),
                    dir.join("elench.1").display()
                ),
            ))
        }
    }
}
