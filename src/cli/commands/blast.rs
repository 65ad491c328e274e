//! `elench blast ID [--depth N]`: what a falsification of a claim revokes; `elench blast
//! --signer KEY`: what a compromise of a key would take down.

use crate::cli::failure::Failure;
use crate::cli::globals::Globals;
use crate::cli::output::{one_line, short_id, Format, JsonData, Mode, Report, Style};
use crate::cli::render::blast_text;
use elench::graph::BulkBlast;
use elench::ops::blast::{blast, signer_blast, BlastInput, SignerBlastInput};

impl JsonData for BulkBlast {
    fn write_json(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        BulkBlast::write_json(self, out)
    }
    fn to_value(&self) -> serde_json::Value {
        // Plain structs and strings: serialising them into a value cannot fail.
        serde_json::to_value(self.to_blast()).unwrap_or_default()
    }
}

#[derive(Debug, clap::Args)]
pub struct BlastArgs {
    /// The claim id (cl_…, or a unique prefix of at least 4 hex digits)
    #[arg(value_parser = crate::cli::values::claim_id, required_unless_present = "signer")]
    pub id: Option<crate::cli::values::ClaimRef>,
    /// Instead of a claim: what a compromise of this key would take down, before anyone
    /// declares it (the claims only it signed, and all that rests on them). KEY: a keyid, a
    /// unique prefix of one (4 hex digits or more) or a key's name, as `keys list` shows them
    #[arg(long, value_name = "KEY", conflicts_with = "id",
          value_parser = crate::cli::values::key_name)]
    pub signer: Option<String>,
    /// Only this many layers of dependents
    #[arg(long)]
    pub depth: Option<usize>,
    /// With --format dot or mermaid: draw at most this many claims (the shallowest)
    #[arg(long, value_name = "N", default_value_t = crate::cli::render::graph::DEFAULT_MAX_NODES)]
    pub max_nodes: usize,
    /// What the claim rests on instead: its premises, theirs, and so on (not with
    /// --signer: a compromise takes down what rests on a claim, not its premises)
    #[arg(long, conflicts_with = "signer")]
    pub invert: bool,
    /// Statuses at the tree in DIR: only the verdicts that apply there count
    /// (default: log-wide, every verdict whatever tree it observed)
    #[arg(long, value_name = "DIR")]
    pub at: Option<std::path::PathBuf>,
    /// With --at: keep the files that ignore rules leave out of the tree
    #[arg(long, requires = "at")]
    pub no_ignore: bool,
}

pub fn run(a: BlastArgs, g: &Globals) -> Result<Report, Failure> {
    let format = crate::cli::output::Format::detect(g.format.as_deref());
    let picture = matches!(format, Format::Dot | Format::Mermaid);
    let Some(id) = a.id.clone() else {
        return signer(a, g, format);
    };
    let out = blast(
        &g.context(),
        &BlastInput {
            id: id.into(),
            depth: a.depth,
            invert: a.invert,
            // Claim texts live in the log; read them only when a person will see them.
            with_texts: g.mode == Mode::Text && !format.is_product(),
            at: a.at,
            no_ignore: a.no_ignore,
            picture: picture.then_some(a.max_nodes),
        },
    )?;
    if let Some(shown) = &out.picture {
        return Ok(crate::cli::render::blast_picture(
            &out.bulk.to_blast(),
            shown,
            out.inverted,
            format,
        ));
    }
    if out.inverted {
        // What the root rests on, in the layers of a blast radius.
        let value = serde_json::to_value(&out)
            .map_err(|e| Failure::Internal(format!("blast report: {e}")))?;
        let mut text = String::new();
        if g.mode == Mode::Text {
            let b = out.bulk.to_blast();
            let style = Style::new(g.mode);
            text = blast_text(&b, &out.texts, &out.premises, true, a.depth, &style);
            text.push_str(&format!(
                "\n{} rests on {} claim(s){}\n",
                b.root,
                b.count,
                if b.truncated {
                    " within --depth (more beyond)"
                } else {
                    ""
                }
            ));
        }
        return Ok(Report::new(value, text));
    }
    if g.mode != Mode::Text {
        // Written to stdout straight from the member arrays: a large closure never becomes
        // a `Value` tree or a string per member.
        return Ok(Report::streaming(out.bulk, String::new()));
    }
    let b = out.bulk.to_blast();
    let style = Style::new(g.mode);
    let prose_of = |id: &str| -> String {
        out.texts
            .get(id)
            .and_then(|t| t.as_str())
            .map(one_line)
            .unwrap_or_default()
    };
    let tree = blast_text(&b, &out.texts, &out.premises, false, a.depth, &style);
    let mut text = format!(
        "{tree}\nblast radius of {}: {} dependent claim(s){}\n",
        b.root,
        b.count,
        if b.truncated {
            " within --depth (more beyond)"
        } else {
            ""
        }
    );
    // The tree shows every member once with its status; the layers are only counted here
    // (JSON has them whole).
    let sizes: Vec<String> = b
        .layers
        .iter()
        .filter(|l| l.depth > 0)
        .map(|l| format!("depth {}: {}", l.depth, l.claims.len()))
        .collect();
    if !sizes.is_empty() {
        text.push_str(&format!("{}\n", sizes.join(", ")));
    }
    if !b.affected.is_empty() {
        text.push_str("affected (outside the closure, decided by a record inside it):\n");
        for x in &b.affected {
            let by: Vec<&str> = x.decided_by.iter().map(|d| short_id(d)).collect();
            let prose = prose_of(&x.id);
            text.push_str(&format!(
                "  {} {} by {}  {}\n",
                style.id(&x.id),
                style.status(x.status.as_str()),
                by.join(", "),
                style.dim(&prose)
            ));
        }
    }
    Ok(Report::streaming(out.bulk, text))
}

/// `blast --signer KEY`: what a compromise of the key would take down, as the layers of a
/// blast radius whose first layer is the claims only it signed.
fn signer(a: BlastArgs, g: &Globals, format: Format) -> Result<Report, Failure> {
    let picture = matches!(format, Format::Dot | Format::Mermaid);
    let out = signer_blast(
        &g.context(),
        &SignerBlastInput {
            signer: a.signer.unwrap_or_default(),
            depth: a.depth,
            with_texts: g.mode == Mode::Text && !format.is_product(),
            at: a.at,
            no_ignore: a.no_ignore,
            picture: picture.then_some(a.max_nodes),
        },
    )?;
    let key = &out.signer;
    let who = format!("{} key {:?} ({})", key.role, key.name, short_id(&key.keyid));
    let summary = format!(
        "a compromise of {who} would take down {} claim(s) it alone signed and {} resting on \
         them{}",
        out.signed,
        out.count,
        if out.truncated {
            " within --depth (more beyond)"
        } else {
            ""
        }
    );
    if let Some(shown) = &out.picture {
        return Ok(crate::cli::render::blast_picture_titled(
            &out.as_blast(),
            shown,
            &summary,
            format,
        ));
    }
    let value =
        serde_json::to_value(&out).map_err(|e| Failure::Internal(format!("blast report: {e}")))?;
    if g.mode != Mode::Text {
        return Ok(Report::new(value, String::new()));
    }
    let b = out.as_blast();
    let style = Style::new(g.mode);
    let mut text = blast_text(&b, &out.texts, &out.premises, false, a.depth, &style);
    if key.compromised {
        text.push_str(&format!(
            "\n{who} is already declared compromised by the trust policy in force\n"
        ));
    }
    text.push_str(&format!("\n{summary}\n"));
    if !b.affected.is_empty() {
        text.push_str(
            "affected (outside, decided by a record it alone signed or resting on one):\n",
        );
        for x in &b.affected {
            let by: Vec<&str> = x.decided_by.iter().map(|d| short_id(d)).collect();
            let prose = out
                .texts
                .get(&x.id)
                .and_then(|t| t.as_str())
                .map(one_line)
                .unwrap_or_default();
            text.push_str(&format!(
                "  {} {} by {}  {}\n",
                style.id(&x.id),
                style.status(x.status.as_str()),
                by.join(", "),
                style.dim(&prose)
            ));
        }
    }
    Ok(Report::new(value, text))
}
