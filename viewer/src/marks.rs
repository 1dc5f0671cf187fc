//! Which lines of an observation a perturbation touched, so the attempt page
//! can mark them.
//!
//! A step's `perturbations` are short phrases (`modal`, `relabel: 'Issues' ->
//! 'Tickets'`, `distractor: 'Promo banner'`). The text the agent saw carries
//! the perturbed elements under their new names: a relabel's last quoted
//! name, any other phrase's quoted names. The modal is the page's `dialog`.
//! A line is marked when it holds one of those names (or, for the modal, the
//! `dialog` role).

/// The 0-based indexes of the lines of `observation` a perturbation touched, ascending.
pub fn perturbed_lines(observation: &str, perturbations: &[String]) -> Vec<usize> {
    let mut needles: Vec<String> = Vec::new();
    let mut dialog = false;
    for p in perturbations {
        let quoted = quoted(p);
        if p.trim_start().starts_with("relabel") {
            needles.extend(quoted.last().cloned());
        } else {
            needles.extend(quoted);
        }
        if p.contains("modal") {
            dialog = true;
        }
    }
    needles.retain(|n| !n.trim().is_empty());
    observation
        .lines()
        .enumerate()
        .filter(|(_, line)| {
            needles.iter().any(|n| line.contains(n.as_str()))
                || (dialog && (line.contains(" dialog ") || line.contains("alertdialog")))
        })
        .map(|(i, _)| i)
        .collect()
}

/// The texts between single quotes in `s`, in order.
fn quoted(s: &str) -> Vec<String> {
    s.split('\'').skip(1).step_by(2).map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relabel_marks_the_new_name_and_a_modal_the_dialog() {
        let obs = "[1] RootWebArea 'Project'\n[2] link 'Tickets'\n[3] link 'Issues board'\n[4] dialog 'Subscribe'\n[5] button 'Close'";
        let p = vec!["relabel: 'Issues' -> 'Tickets'".to_string(), "modal".to_string()];
        assert_eq!(perturbed_lines(obs, &p), vec![1, 3]);
        let d = vec!["distractor: 'Close'".to_string()];
        assert_eq!(perturbed_lines(obs, &d), vec![4]);
        assert!(perturbed_lines(obs, &[]).is_empty());
        assert!(perturbed_lines(obs, &["swallowed click".to_string()]).is_empty());
    }
}
