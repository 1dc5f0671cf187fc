//! The public site (v1 in a Twenty Seventeen style, v2 in a Twenty
//! Twenty-Four style; the URLs are the same): the home page of latest posts,
//! single posts with approved comments and the comment form, pages, category,
//! tag and author archives, search, and `?p=N` links.

use skillshift_common::Version;

use crate::kit::paging::paginate;
use crate::kit::text::esc;
use crate::kit::web::{Req, Resp};

use super::data::{Blog, Post};
use super::ui;

pub fn route(v: Version, b: &Blog, req: &Req) -> Resp {
    if let Some(id) = req.q("p").and_then(|p| p.parse::<u32>().ok()) {
        return match b.post(id).filter(|p| p.status == "publish") {
            Some(p) => Resp::redirect(p.permalink()),
            None => not_found(v, b),
        };
    }
    let parts: Vec<&str> = req.path.trim_matches('/').split('/').filter(|s| !s.is_empty()).collect();
    let published = |p: &&Post| p.status == "publish" && p.kind == "post";
    match parts.as_slice() {
        [] => {
            let kw = req.q("s").unwrap_or("");
            let list: Vec<&Post> = if kw.is_empty() {
                b.posts.iter().rev().filter(published).collect()
            } else {
                b.search_posts("post", "publish", kw).into_iter().chain(b.search_posts("page", "publish", kw)).collect()
            };
            let title = if kw.is_empty() { String::new() } else { format!("Search Results for: {kw}") };
            archive(v, b, req, &title, &list)
        }
        ["category", s] | ["tag", s] => {
            let is_cat = parts[0] == "category";
            let terms = if is_cat { &b.categories } else { &b.tags };
            let Some(t) = terms.iter().find(|t| t.slug == *s) else { return not_found(v, b) };
            let list: Vec<&Post> = b
                .posts
                .iter()
                .rev()
                .filter(published)
                .filter(|p| p.categories.contains(&t.id) || p.tags.contains(&t.id))
                .collect();
            archive(v, b, req, &format!("{}: {}", if is_cat { "Category" } else { "Tag" }, t.name), &list)
        }
        ["author", login] => {
            let Some(u) = b.users.iter().find(|u| u.login == *login) else { return not_found(v, b) };
            let list: Vec<&Post> = b.posts.iter().rev().filter(published).filter(|p| p.author == u.id).collect();
            archive(v, b, req, &format!("Author: {}", u.display()), &list)
        }
        [_, _, _, slug] | [slug] => {
            let want = format!("/{}/", parts.join("/"));
            match b.posts.iter().find(|p| p.slug == *slug && p.status == "publish" && p.permalink() == want) {
                Some(p) => single(v, b, p),
                None => not_found(v, b),
            }
        }
        _ => not_found(v, b),
    }
}

fn layout(v: Version, b: &Blog, title: &str, main: &str) -> String {
    let nav: String = b
        .posts
        .iter()
        .filter(|p| p.kind == "page" && p.status == "publish")
        .take(4)
        .map(|p| format!("<li><a href=\"{}\">{}</a></li>", p.permalink(), esc(&p.title)))
        .collect();
    let (class, css) = if v == Version::V2 {
        ("wp-theme-twentytwentyfour", "body{background:#f9f9f9;font:18px/1.6 Georgia,serif;color:#111}header,main,footer{max-width:720px;margin:auto;padding:16px}")
    } else {
        ("twentyseventeen", "body{font:16px/1.5 'Libre Franklin',sans-serif;color:#333}header{background:#222;color:#fff;padding:40px}header a{color:#fff}main{max-width:740px;margin:auto;padding:16px}")
    };
    ui::shell(
        &format!("{title} – {}", b.opt("blogname")),
        class,
        css,
        &format!(
            "<header class=\"site-header\"><p class=\"site-title\"><a href=\"/\">{}</a></p><p class=\"site-description\">{}</p>\
             <nav aria-label=\"Top Menu\"><ul>{nav}</ul></nav>\
             <form role=\"search\" method=\"get\" action=\"/\"><label for=\"s\">Search for:</label> <input type=\"search\" id=\"s\" name=\"s\"> <button type=\"submit\">Search</button></form></header>\
             <main id=\"main\">{main}</main><footer class=\"site-footer\"><p>Proudly powered by WordPress</p></footer>",
            esc(b.opt("blogname")),
            esc(b.opt("blogdescription"))
        ),
    )
}

fn meta(b: &Blog, p: &Post) -> String {
    let author = b
        .user(p.author)
        .map(|u| format!("<a href=\"/author/{}/\">{}</a>", u.login, esc(&u.display())))
        .unwrap_or_default();
    let cats: Vec<String> = p
        .categories
        .iter()
        .filter_map(|id| b.categories.iter().find(|c| c.id == *id))
        .map(|c| format!("<a href=\"/category/{}/\">{}</a>", c.slug, esc(&c.name)))
        .collect();
    let tags: Vec<String> = p
        .tags
        .iter()
        .filter_map(|id| b.tags.iter().find(|t| t.id == *id))
        .map(|t| format!("<a href=\"/tag/{}/\">{}</a>", t.slug, esc(&t.name)))
        .collect();
    format!(
        "<p class=\"entry-meta\">Posted on <time>{}</time> by {author}</p><p class=\"cat-links\">Categories: {}</p><p class=\"tags-links\">Tags: {}</p>",
        p.date,
        cats.join(", "),
        tags.join(", ")
    )
}

fn archive(v: Version, b: &Blog, req: &Req, title: &str, list: &[&Post]) -> Resp {
    let per = b.opt("posts_per_page").parse::<usize>().unwrap_or(10).max(1);
    let (items, pages) = paginate(list, req.page(), per);
    let mut main = if title.is_empty() {
        "<h1 class=\"page-title screen-reader-text\">Posts</h1>".to_string()
    } else {
        format!("<h1 class=\"page-title\">{}</h1>", esc(title))
    };
    if items.is_empty() {
        main.push_str("<p>Sorry, but nothing matched your search terms.</p>");
    }
    for p in items {
        main.push_str(&format!(
            "<article class=\"post-{}\"><h2 class=\"entry-title\"><a href=\"{}\">{}</a></h2>{}<div class=\"entry-summary\"><p>{}</p></div></article>",
            p.id,
            p.permalink(),
            esc(&p.title),
            if p.kind == "post" { meta(b, p) } else { String::new() },
            esc(&p.content)
        ));
    }
    let page = req.page().min(pages);
    let link = |n: usize, l: &str| {
        let mut q: Vec<String> =
            req.query.iter().filter(|(k, _)| k != "paged").map(|(k, v)| format!("{k}={}", ui::q(v))).collect();
        q.push(format!("paged={n}"));
        format!("<a href=\"{}?{}\">{l}</a>", req.path, q.join("&"))
    };
    main.push_str(&format!(
        "<nav class=\"navigation pagination\" aria-label=\"Posts\">{} <span>Page {page} of {pages}</span> {}</nav>",
        if page > 1 { link(page - 1, "Newer posts") } else { String::new() },
        if page < pages { link(page + 1, "Older posts") } else { String::new() }
    ));
    Resp::Page(layout(v, b, if title.is_empty() { "Home" } else { title }, &main))
}

fn single(v: Version, b: &Blog, p: &Post) -> Resp {
    let approved: Vec<_> = b.comments.iter().filter(|c| c.post == p.id && c.status == "approved").collect();
    let comments: String = approved
        .iter()
        .map(|c| format!("<li id=\"comment-{}\"><article><p class=\"comment-author\"><b>{}</b> says:</p><p>{}</p></article></li>", c.id, esc(&c.author), esc(&c.content)))
        .collect();
    let heading = if v == Version::V2 {
        "Comments".to_string()
    } else {
        format!("{} thoughts on “{}”", approved.len(), esc(&p.title))
    };
    let discussion = if p.kind == "post" {
        format!(
            "<section id=\"comments\" aria-labelledby=\"comments-title\"><h2 id=\"comments-title\">{heading}</h2><ol class=\"comment-list\">{comments}</ol>\
             <form method=\"post\" action=\"/wp-comments-post.php\" aria-labelledby=\"reply-title\"><h3 id=\"reply-title\">Leave a Reply</h3>\
             <input type=\"hidden\" name=\"comment_post_ID\" value=\"{}\">\
             <p><label for=\"comment\">Comment</label> <textarea id=\"comment\" name=\"comment\" required></textarea></p>\
             <p><label for=\"author\">Name</label> <input type=\"text\" id=\"author\" name=\"author\"></p>\
             <p><label for=\"email\">Email</label> <input type=\"email\" id=\"email\" name=\"email\"></p>\
             <p><button type=\"submit\">Post Comment</button></p></form></section>",
            p.id
        )
    } else {
        String::new()
    };
    let main = format!(
        "<article class=\"post-{}\"><h1 class=\"entry-title\">{}</h1>{}<div class=\"entry-content\"><p>{}</p></div></article>{discussion}",
        p.id,
        esc(&p.title),
        if p.kind == "post" { meta(b, p) } else { String::new() },
        esc(&p.content)
    );
    Resp::Page(layout(v, b, &p.title, &main))
}

fn not_found(v: Version, b: &Blog) -> Resp {
    Resp::NotFound(layout(v, b, "Page not found", "<h1 class=\"page-title\">Oops! That page can’t be found.</h1>"))
}

/// POST `/wp-comments-post.php`: a visitor's comment, held for moderation.
pub fn post_comment(b: &mut Blog, req: &Req) -> Resp {
    let post = req
        .f("comment_post_ID")
        .and_then(|p| p.parse::<u32>().ok())
        .and_then(|id| b.post(id))
        .filter(|p| p.status == "publish")
        .map(|p| (p.id, p.permalink()));
    let text = req.f("comment").unwrap_or("").trim().to_string();
    let author = req.f("author").unwrap_or("").trim().to_string();
    let (Some((id, link)), false, false) = (post, text.is_empty(), author.is_empty()) else {
        return Resp::Page(ui::shell("Comment Submission Failure", "wp-die", "", "<main><p role=\"alert\"><strong>Error</strong>: please fill the required fields (name, comment).</p></main>"));
    };
    let nid = b.comments.iter().map(|c| c.id).max().unwrap_or(0) + 1;
    b.comments.push(super::data::Comment {
        id: nid,
        post: id,
        author,
        email: req.f("email").unwrap_or("").to_string(),
        content: text,
        status: "pending".into(),
        date: "2026-11-29".into(),
    });
    Resp::redirect(format!("{link}?unapproved={nid}"))
}
