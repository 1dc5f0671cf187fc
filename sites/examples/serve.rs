//! Serves all six fixture site-versions on consecutive ports from `PORT`
//! (default 8001) until Ctrl-C, without building the whole `skillshift`
//! binary: `cargo run -p skillshift-sites --example serve [PORT]`.

#[tokio::main]
async fn main() {
    let port = std::env::args().nth(1).and_then(|p| p.parse().ok()).unwrap_or(8001);
    let handles = match skillshift_sites::serve_all("127.0.0.1", port).await {
        Ok(h) => h,
        Err(e) => {
            eprintln!("serve: {e}");
            std::process::exit(2);
        }
    };
    for h in &handles {
        println!("{:<13} {}", h.image(), h.base_url);
    }
    let _ = tokio::signal::ctrl_c().await;
}
