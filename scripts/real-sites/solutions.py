#!/usr/bin/env python3
"""Reference solutions of the WordPress tasks on the real WordPress 6.1.9 (docs/real-sites.md).

The same tasks as the fixture's (data/tasks/wordpress.v{1,2}.json), worked through the real
application's screens: v1 is the classic-editor instance, v2 the block editor as shipped. Each
template's steps are written once here, from the accessibility tree Chromium shows on the real pages,
and instantiated with the task's instantiation_dict. Writes data/solutions/real/wordpress.v{1,2}.json,
data/tasks/real/wordpress.v{1,2}.json (the fixture's tasks, but for the evaluators that cannot hold on
6.1's pages: real_task), and data/skills/real-wordpress.json: the same steps of v1 (the source version) with `{{param}}` in
place of the values, one skill per template, what a skill learner on the real source instance would
keep (the `skills` agent's library for `local --real-sites`).

    python3 scripts/real-sites/solutions.py [--check]   # --check: fail if the files differ
"""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def t(role, name="", **kw):
    out = {"role": role, "name": name}
    out.update({k: v for k, v in kw.items() if v is not None})
    return out


def click(role, name="", **kw):
    return {"action": "click", "target": t(role, name, **kw)}


def fill(role, name, text, **kw):
    return {"action": "fill", "target": t(role, name, **kw), "text": text}


def hover(role, name="", **kw):
    return {"action": "hover", "target": t(role, name, **kw)}


def read(role, name="", pattern=None, values=None, **kw):
    step = {"action": "read", "target": t(role, name, **kw)}
    if pattern:
        step["pattern"] = pattern
    if values:
        step["values"] = values
    return step


# A count of zero is words on the real screens: "No comments" in the posts list's cell (after a dash),
# "No comments found." in the comments list, where the fixture shows 0. The task's answer stays "0",
# what WebArena would state; the script knows how the screen words it.
ZERO = {"No comments": "0"}


def goto(url):
    return {"action": "goto", "url": url}


def search_posts(post):
    return [click("link", "Posts"), fill("searchbox", "Search Posts:", post), click("button", "Search Posts")]


def search_users(user):
    return [click("link", "Users"), fill("searchbox", "Search Users:", user), click("button", "Search Users")]


def search_comments(author, status=""):
    # The menu link's name carries the count of comments in moderation, which tasks change.
    return [
        goto("__WORDPRESS__/wp-admin/edit-comments.php" + (f"?comment_status={status}" if status else "")),
        fill("searchbox", "Search Comments:", author),
        click("button", "Search Comments"),
    ]


def search_categories(category):
    return [
        click("link", "Posts"),
        click("link", "Categories"),
        fill("searchbox", "Search Categories:", category),
        click("button", "Search Categories"),
    ]


def title_link(post):
    # The row's title link, always shown; the row actions appear only while the row is hovered.
    return click("link", f"\u201c{post}\u201d (Edit)")


def row_hover(column, row):
    return hover("cell", column=column, row=row)


# The block editor's welcome guide opens on every fresh browser (docs/real-sites.md, must-use plugins).
CLOSE_GUIDE = click("button", "Close dialog")


def solution(version, template, d):
    v2 = version == "v2"
    if template == 0:
        return search_posts(d["post"]) + [read("cell", column="Author", row=d["post"])]
    if template == 1:
        return search_posts(d["post"]) + [
            read("cell", column="Comments", row=d["post"], pattern=r"(\d+|No comments)", values=ZERO)
        ]
    if template == 2:
        return search_users(d["user"]) + [read("cell", column="Email", row=d["user"])]
    if template == 3:
        return search_users(d["user"]) + [read("cell", column="Role", row=d["user"])]
    if template == 4:
        return search_categories(d["category"]) + [read("cell", column="Count", row=d["category"])]
    if template == 5:
        # The count above the list is plain text ("2 items"), known by its shape; with none, the list
        # says "No comments found." and there is no count.
        return search_comments(d["author"]) + [
            read(
                "StaticText",
                name_pattern=r"^(\d+ items?|No comments found\.)$",
                nth=0,
                pattern=r"^(\d+|No comments)",
                values=ZERO,
            )
        ]
    if template == 6:
        steps = [click("link", "Posts"), click("link", "Add New", nth=0)]
        if v2:
            return steps + [
                CLOSE_GUIDE,
                fill("textbox", "Add title", d["title"]),
                click("button", "Add default block"),
                fill("document", "Empty block; start writing or type forward slash to choose a block", d["text"]),
                click("button", "Publish"),
                click("button", "Publish", nth=1),
            ]
        # The text first, then the title: the classic editor autosaves a new post 200 ms after its title
        # loses focus and ignores "Publish" while that request runs; a title left last loses its focus to
        # "Publish" itself, whose submit cancels that autosave (wp-admin/js/post.js).
        return steps + [
            click("button", "Text"),
            fill("textbox", "", d["text"]),
            fill("textbox", "Enter title here", d["title"]),
            click("button", "Publish"),
        ]
    if template == 7:
        steps = search_posts(d["post"]) + [title_link(d["post"])]
        if v2:
            return steps + [CLOSE_GUIDE, fill("textbox", "Add title", d["title"]), click("button", "Update")]
        return steps + [fill("textbox", "Enter title here", d["title"]), click("button", "Update")]
    if template == 8:
        steps = search_posts(d["post"]) + [title_link(d["post"])]
        if v2:
            return steps + [
                CLOSE_GUIDE,
                click("button", "Tags"),
                fill("combobox", "Add New Tag", d["tag"]),
                {"action": "press", "target": t("combobox", "Add New Tag"), "key": "Enter"},
                click("button", "Update"),
            ]
        return steps + [
            fill("combobox", "Add New Tag", d["tag"]),
            click("button", "Add"),
            click("button", "Update"),
        ]
    if template == 9:
        # Pending only: a row filter "Approve this comment" would also match "Unapprove this comment".
        return search_comments(d["author"], "moderated") + [
            row_hover("Author", d["author"]),
            click("button", "Approve this comment"),
        ]
    if template == 10:
        return search_posts(d["post"]) + [
            row_hover("Title", d["post"]),
            click("link", f"Move \u201c{d['post']}\u201d to the Trash"),
        ]
    if template == 11:
        return search_posts(d["post"]) + [
            row_hover("Title", d["post"]),
            click("button" if v2 else "link", f"Quick edit \u201c{d['post']}\u201d inline"),
            {"action": "select", "target": t("combobox", "Status"), "option": "Draft"},
            click("button", "Update"),
        ]
    if template == 12:
        return search_users(d["user"]) + [
            click("link", d["user"]),
            {"action": "select", "target": t("combobox", "Role"), "option": d["role"]},
            click("button", "Update User"),
        ]
    if template == 13:
        return [click("link", "Settings"), fill("textbox", "Site Title", d["title"]), click("button", "Save Changes")]
    if template == 14:
        return search_posts(d["post"]) + [title_link(d["post"])]
    if template == 15:
        return search_categories(d["category"]) + [
            row_hover("Name", d["category"]),
            click("link", f"View \u201c{d['category']}\u201d archive"),
        ]
    if template == 16:
        # 6.1's block theme has no Menus, Widgets or Customize screen: their 6.1 places (REAL_SCREENS).
        if v2 and d["screen"] == "Menus":
            # The Navigation Menus list, linked only from the Navigation block's "Manage menus" in the
            # site editor's canvas (an iframe): opened by its address.
            return [click("link", "Appearance"), click("link", "Editor beta"), goto(REAL_SCREENS["Menus"][0])]
        if v2 and d["screen"] == "Widgets":
            return [
                click("link", "Appearance"),
                click("link", "Editor beta"),
                click("button", "Toggle navigation"),
                click("link", "Template Parts"),
            ]
        if v2 and d["screen"] == "Customize":
            return [click("link", "Appearance"), click("link", "Editor beta"), click("button", "Styles")]
        return [click("link", "Appearance"), click("link", d["screen"])]
    if template == 17:
        return search_users(d["user"]) + [click("link", d["user"])]
    if template == 18:
        return search_posts(d["post"]) + [row_hover("Title", d["post"]), click("link", f"View \u201c{d['post']}\u201d")]
    raise SystemExit(f"no real solution for template {template}")


# Where the real WordPress 6.1's block theme keeps what the fixture's v2 (6.3-6.5) shows at
# `site-editor.php?path=...`: the Navigation Menus list (6.1's "Manage menus", the menus of the
# Navigation block), the site editor's Template Parts (what 6.3 folded into "Patterns"), and the site
# editor itself, whose Styles panel has no address of its own in 6.1 (docs/real-sites.md).
REAL_SCREENS = {
    "Menus": ("__WORDPRESS__/wp-admin/edit.php?post_type=wp_navigation", "site-editor.php?path=/navigation"),
    "Widgets": ("__WORDPRESS__/wp-admin/site-editor.php?postType=wp_template_part", "site-editor.php?path=/patterns"),
    "Customize": ("__WORDPRESS__/wp-admin/site-editor.php", "site-editor.php?path=/wp_global_styles"),
}


def real_task(version, task):
    """The task as it runs on the real WordPress: the fixture's, but for the evaluators that cannot
    hold on 6.1's pages; each change is a row of the fidelity table (docs/real-sites.md)."""
    out = json.loads(json.dumps(task))
    template, ev = task["intent_template_id"], out["eval"]
    if template == 16 and version == "v2" and task["instantiation_dict"]["screen"] in REAL_SCREENS:
        url, fixture = REAL_SCREENS[task["instantiation_dict"]["screen"]]
        if not ev["reference_url"].endswith(fixture):
            raise SystemExit(f"task {task['task_id']}: the fixture's v2 reference_url is no longer {fixture}")
        ev["reference_url"] = url
    return out


SKILL_NAMES = [
    "post_author", "post_comment_count", "user_email", "user_role", "category_count", "commenter_count",
    "publish_post", "rename_post", "tag_post", "approve_comment", "trash_post", "quick_draft",
    "user_set_role", "site_title", "open_editor", "category_archive", "appearance_screen", "open_user",
    "view_post",
]


def library(tasks):
    skills = {}
    for task in tasks:
        template = task["intent_template_id"]
        if template in skills:
            continue
        params = list(task["instantiation_dict"])
        steps = solution("v1", template, {k: "{{" + k + "}}" for k in params})
        skills[template] = {
            "name": f"wordpress_{SKILL_NAMES[template]}",
            "site": "wordpress",
            "params": params,
            "description": task["intent_template"],
            "steps": steps,
        }
    return {"schema": "skillshift.skills/1", "method": "real-wordpress", "skills": [skills[k] for k in sorted(skills)]}


def main():
    check = "--check" in sys.argv[1:]
    stale = []
    outputs = []
    for version in ("v1", "v2"):
        tasks = json.loads((ROOT / f"data/tasks/wordpress.{version}.json").read_text())
        out = [solution(version, task["intent_template_id"], task["instantiation_dict"]) for task in tasks]
        outputs.append((ROOT / f"data/solutions/real/wordpress.{version}.json", out, 1))
        real = [real_task(version, t) for t in tasks]
        # Only a version whose tasks differ has a file of its own; the others run the fixture's.
        outputs.append((ROOT / f"data/tasks/real/wordpress.{version}.json", real if real != tasks else None, 2))
        if version == "v1":
            outputs.append((ROOT / "data/skills/real-wordpress.json", library(tasks), 1))
    for path, out, indent in outputs:
        if out is None:
            if path.exists():
                if check:
                    stale.append(f"{path} (not needed)")
                else:
                    path.unlink()
                    print(f"removed {path}", file=sys.stderr)
            continue
        text = json.dumps(out, indent=indent, ensure_ascii=False) + "\n"
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(str(path))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"wrote {path}", file=sys.stderr)
    if stale:
        raise SystemExit(f"stale, run scripts/real-sites/solutions.py: {', '.join(stale)}")


if __name__ == "__main__":
    main()
