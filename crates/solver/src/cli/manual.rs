//! The shell completions and the manual page, made from [`Args`]'s clap definition by
//! `clap_complete` and `clap_mangen` (`solver --generate WHAT`, which `cargo xtask man`
//! runs to install them).

use clap::{CommandFactory, ValueEnum};
use clap_complete::Shell;

use super::Args;

/// What `--generate` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Generate {
    /// The manual page, `solver.1` (roff).
    Man,
    /// Completions for bash.
    Bash,
    /// Completions for zsh (`_solver`).
    Zsh,
    /// Completions for fish (`solver.fish`).
    Fish,
}

impl Generate {
    /// Everything `--generate` makes, with the file name each is installed under.
    #[cfg(test)]
    pub const ALL: [(Generate, &'static str); 4] = [
        (Generate::Man, "solver.1"),
        (Generate::Bash, "solver.bash"),
        (Generate::Zsh, "_solver"),
        (Generate::Fish, "solver.fish"),
    ];
}

/// The text of `what`, made from the current options.
pub fn generate(what: Generate) -> Vec<u8> {
    let cmd = Args::command();
    let mut out = Vec::new();
    let shell = match what {
        Generate::Man => {
            clap_mangen::Man::new(cmd).render(&mut out).expect("writing to memory cannot fail");
            return out;
        }
        Generate::Bash => Shell::Bash,
        Generate::Zsh => Shell::Zsh,
        Generate::Fish => Shell::Fish,
    };
    let mut shown = without_hidden(&cmd);
    clap_complete::generate(shell, &mut shown, "solver", &mut out);
    out
}

/// `cmd` with only the options `--help` lists: the completions of some shells would offer
/// hidden ones too (`--generate`, and `--mpi` in a build without MPI).
fn without_hidden(cmd: &clap::Command) -> clap::Command {
    let shown = cmd.get_arguments().filter(|a| !a.is_hide_set()).cloned();
    clap::Command::new("solver")
        .version(env!("CARGO_PKG_VERSION"))
        .about(cmd.get_about().cloned().unwrap_or_default())
        .args(shown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completions_and_manual_page_name_every_option() {
        let command = Args::command();
        let longs: Vec<&str> =
            command.get_arguments().filter(|a| !a.is_hide_set()).filter_map(|a| a.get_long()).collect();
        assert!(longs.contains(&"threads") && longs.contains(&"stats-internals"), "{longs:?}");
        for (what, _) in Generate::ALL {
            let text = String::from_utf8(generate(what)).unwrap();
            // How an option's name appears in each.
            let shown = |long: &str| match what {
                Generate::Man => format!("\\-\\-{}", long.replace('-', "\\-")),
                Generate::Fish => format!("-l {long}"),
                _ => format!("--{long}"),
            };
            for long in &longs {
                assert!(text.contains(&shown(long)), "{what:?} lacks {}", shown(long));
            }
            assert!(!text.contains(&shown("generate")), "{what:?} lists the hidden --generate");
        }
    }
}
