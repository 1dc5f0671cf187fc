//! Which lines of an observation a perturbation touched, so the attempt page
//! can mark them.
//!
//! A step's `perturbations` are phrases read back into
//! [`AppliedPerturbation`]s (`modal`, `relabel: 'Issues' -> 'Tickets'`,
//! `distractor: 'Promo banner'`). The text the agent saw carries the perturbed
//! elements under their new names ([`AppliedPerturbation::shown_names`]: a
//! relabel's new name, an unknown phrase's quoted names). The modal is the
//! page's `dialog`. A line is marked when it holds one of those names (or, for
//! the modal, the `dialog` role).

use skillshift_common::perturbation::AppliedPerturbation;

/// The 0-based indexes of the lines of `observation` a perturbation touched, ascending.
pub fn perturbed_lines(observation: &str, perturbations: &[String]) -> Vec<usize> {
    let applied: Vec<AppliedPerturbation> = perturbations.iter().map(|p| AppliedPerturbation::parse(p)).collect();
    let mut needles: Vec<&str> = applied.iter().flat_map(AppliedPerturbation::shown_names).collect();
    needles.retain(|n| !n.trim().is_empty());
    let dialog = applied.iter().any(|p| match p {
        AppliedPerturbation::Modal => true,
        AppliedPerturbation::Other(phrase) => phrase.contains("modal"),
        _ => false,
    });
    observation
        .lines()
        .enumerate()
        .filter(|(_, line)| {
            needles.iter().any(|n| line.contains(n))
                || (dialog && (line.contains(" dialog ") || line.contains("alertdialog")))
        })
        .map(|(i, _)| i)
        .collect()
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

    #[test]
    fn a_relabel_the_worker_wrote_marks_its_new_name() {
        let obs = "[1] RootWebArea 'Project'\n[2] link 'Tickets 3'\n[3] link 'Issues'";
        let written = AppliedPerturbation::Relabel { from: "Issues 3".into(), to: "Tickets 3".into() }.to_string();
        assert_eq!(perturbed_lines(obs, &[written]), vec![1]);
    }
}
