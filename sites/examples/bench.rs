//! Page latency and reset time of every fixture site-version, as a Markdown
//! table for docs/performance.md. Run optimised:
//! `cargo run --release -p skillshift-sites --example bench [ROUNDS] [RESETS]`.

use skillshift_common::{Site, Version};

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let rounds = args.next().and_then(|a| a.parse().ok()).unwrap_or(20);
    let resets = args.next().and_then(|a| a.parse().ok()).unwrap_or(50);
    println!("| image | pages | requests | not 200 | page p50 ms | page p90 ms | socket round trip p50 ms | reset p50 ms | reset max ms |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for &site in Site::ALL {
        for &version in Version::ALL {
            let r = skillshift_sites::bench::bench(site, version, rounds, resets).await;
            println!(
                "| {} | {} | {} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
                r.image,
                r.pages,
                r.requests,
                r.not_ok,
                r.page_p50_ms,
                r.page_p90_ms,
                r.socket_p50_ms,
                r.reset_p50_ms,
                r.reset_max_ms
            );
        }
    }
}
