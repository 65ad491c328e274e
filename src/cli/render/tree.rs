//! `blast`'s text as a tree in the style of `cargo tree`: each claim under the claim it
//! rests on (or, `--invert`, under the claim resting on it), children sorted by id, a claim
//! met again marked `(*)` and not expanded twice, `--depth` levels at most.

use std::collections::{HashMap, HashSet};

/// The tree under `root`; `children` gives a node's children (sorted), `label` its line.
/// Walked with an explicit stack, so a chain of any length prints.
pub fn render(
    root: &str,
    children: &HashMap<String, Vec<String>>,
    label: &mut dyn FnMut(&str) -> String,
    max_depth: Option<usize>,
) -> String {
    let mut out = format!("{}\n", label(root));
    let mut expanded: HashSet<String> = HashSet::new();
    expanded.insert(root.to_owned());
    // (node, depth, the prefix of its line's children, is it its parent's last child)
    let mut stack: Vec<(String, usize, String, bool)> = Vec::new();
    let push_children =
        |stack: &mut Vec<(String, usize, String, bool)>, id: &str, depth: usize, prefix: &str| {
            if max_depth.is_some_and(|m| depth >= m) {
                return;
            }
            if let Some(kids) = children.get(id) {
                for (i, k) in kids.iter().enumerate().rev() {
                    stack.push((k.clone(), depth + 1, prefix.to_owned(), i + 1 == kids.len()));
                }
            }
        };
    push_children(&mut stack, root, 0, "");
    while let Some((id, depth, prefix, last)) = stack.pop() {
        let branch = if last { "└── " } else { "├── " };
        let repeat = !expanded.insert(id.clone());
        out.push_str(&format!(
            "{prefix}{branch}{}{}\n",
            label(&id),
            if repeat { " (*)" } else { "" }
        ));
        if !repeat {
            let below = format!("{prefix}{}", if last { "    " } else { "│   " });
            push_children(&mut stack, &id, depth, &below);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_are_marked_and_depth_bounds_the_tree() {
        let mut children = HashMap::new();
        children.insert("r".to_owned(), vec!["a".to_owned(), "b".to_owned()]);
        children.insert("a".to_owned(), vec!["c".to_owned()]);
        children.insert("b".to_owned(), vec!["c".to_owned()]);
        children.insert("c".to_owned(), vec!["d".to_owned()]);
        let mut label = |id: &str| id.to_owned();
        assert_eq!(
            render("r", &children, &mut label, None),
            "r\n├── a\n│   └── c\n│       └── d\n└── b\n    └── c (*)\n"
        );
        assert_eq!(
            render("r", &children, &mut label, Some(1)),
            "r\n├── a\n└── b\n"
        );
    }
}
