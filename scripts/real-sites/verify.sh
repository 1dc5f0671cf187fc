#!/usr/bin/env bash
# Checks the running real WordPress instances of scripts/real-sites.sh over HTTP
# (curl, no browser): the generator tag, WordPress's own login form, which editor
# each version opens, 4.9's Quick Edit link on v1, the fixture's ids, and that a
# change made through the REST API is gone after POST <env-ctrl>/reset (read back
# through the REST API), with the reset's time. Ends with "N passed, N failed".
#
#   bash scripts/real-sites/verify.sh [SITES_JSON]     (default: .real-sites/real-sites.json)
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SITES="${1:-${REAL_SITES_JSON:-$ROOT/.real-sites/real-sites.json}}"
BLOG="$(dirname "$SITES")/blog.json"
[ -f "$SITES" ] || { echo "no sites file $SITES (run scripts/real-sites.sh wordpress)" >&2; exit 2; }
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok    $*"; }
bad() { fail=$((fail + 1)); echo "FAIL  $*"; }
check() { # description command...
  local what="$1"; shift
  if "$@" >/dev/null 2>&1; then ok "$what"; else bad "$what"; fi
}
field() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); [d := d[k] for k in sys.argv[2:]]; print(d)' "$@"; }
C() { curl -s --noproxy '*' --max-time 30 "$@"; }

# Signs in with wp-login.php's form (and, on v2, "The email is correct"); the cookie jar is $2.
login() { # url jar version
  local url="$1" jar="$2"
  C -c "$jar" -b "$jar" -o /dev/null "$url/wp-login.php"
  local to
  to="$(C -c "$jar" -b "$jar" -o /dev/null -w '%{redirect_url}' --data-urlencode log=admin \
    --data-urlencode pwd=admin1234 --data-urlencode wp-submit='Log In' --data-urlencode testcookie=1 "$url/wp-login.php")"
  if [ "$3" = v2 ]; then
    [[ "$to" == *action=confirm_admin_email* ]] || return 1
    local page nonce
    page="$(C -b "$jar" "$to")"
    nonce="$(grep -o 'name="confirm_admin_email_nonce" value="[^"]*"' <<<"$page" | sed 's/.*value="//; s/"$//')"
    [ -n "$nonce" ] || return 1
    grep -q 'The email is correct' <<<"$page" || return 1
    to="$(C -c "$jar" -b "$jar" -o /dev/null -w '%{redirect_url}' --data-urlencode confirm_admin_email_nonce="$nonce" \
      --data-urlencode redirect_to="$url/wp-admin/" --data-urlencode correct-admin-email='The email is correct' \
      "$url/wp-login.php?action=confirm_admin_email")"
  fi
  [ "$to" = "$url/wp-admin/" ] || return 1
  local dash
  dash="$(C -b "$jar" "$url/wp-admin/")"
  grep -q '<h1>Dashboard' <<<"$dash"
}

rest_nonce() { C -b "$1" "$2/wp-admin/admin-ajax.php?action=rest-nonce"; }

for v in v1 v2; do
  url="$(field "$SITES" sites "wordpress-$v" url)"
  ctl="$(field "$SITES" sites "wordpress-$v" env_ctrl)"
  jar="$TMP/jar-$v"
  echo "== wordpress-$v $url (env-ctrl $ctl)"
  check "$v: the front page says WordPress 6.1.9" \
    grep -qF '<meta name="generator" content="WordPress 6.1.9" />' <(C "$url/")
  check "$v: env-ctrl /health answers success" grep -q '"success": true' <(C "$ctl/health")
  check "$v: env-ctrl /config names wordpress-$v" grep -q "\"env\": \"wordpress-$v\"" <(C "$ctl/config")
  check "$v: the login form has the fields the login steps fill" \
    grep -q 'for="user_login">Username or Email Address</label>' <(C "$url/wp-login.php")
  check "$v: signs in by wp-login.php$([ $v = v2 ] && echo ' and the administration email verification')" login "$url" "$jar" "$v"
  C -b "$jar" "$url/wp-admin/post.php?post=77&action=edit" >"$TMP/editor-$v.html"
  if [ "$v" = v1 ]; then
    check "v1: post.php opens the classic editor (Enter title here, the Publish box)" \
      bash -c "grep -q 'id=\"title-prompt-text\" for=\"title\">Enter title here<' '$TMP/editor-v1.html' && grep -q 'id=\"submitdiv\"' '$TMP/editor-v1.html' && ! grep -q 'block-editor-page' '$TMP/editor-v1.html'"
    check "v1: Quick Edit is 4.9's link" grep -q '<a href="#" class="editinline" aria-label="Quick edit' \
      <(C -b "$jar" "$url/wp-admin/edit.php")
  else
    check "v2: post.php opens the block editor" grep -q 'block-editor-page' "$TMP/editor-v2.html"
    check "v2: Quick Edit is 6.1's button" grep -q '<button type="button" class="button-link editinline"' \
      <(C -b "$jar" "$url/wp-admin/edit.php")
  fi
  nonce="$(rest_nonce "$jar" "$url")"
  # The fixture's ids: every post, page and user of the seed, through the REST API.
  C -b "$jar" -H "X-WP-Nonce: $nonce" "$url/wp-json/wp/v2/posts?per_page=100&status=publish,draft,pending,trash&context=edit&_fields=id,title,status" >"$TMP/p1.json"
  C -b "$jar" -H "X-WP-Nonce: $nonce" "$url/wp-json/wp/v2/posts?per_page=100&page=2&status=publish,draft,pending,trash&context=edit&_fields=id,title,status" >"$TMP/p2.json"
  C -b "$jar" -H "X-WP-Nonce: $nonce" "$url/wp-json/wp/v2/posts?per_page=100&page=3&status=publish,draft,pending,trash&context=edit&_fields=id,title,status" >"$TMP/p3.json"
  C -b "$jar" -H "X-WP-Nonce: $nonce" "$url/wp-json/wp/v2/users?per_page=100&context=edit&_fields=id,username,name,email" >"$TMP/users.json"
  check "$v: the fixture's 241 posts and 60 users have its ids, titles, statuses, logins and emails" \
    python3 - "$BLOG" "$TMP" <<'EOF'
import json, sys
blog, tmp = json.load(open(sys.argv[1])), sys.argv[2]
got = {p["id"]: (p["title"]["raw"], p["status"]) for n in (1, 2, 3) for p in json.load(open("%s/p%d.json" % (tmp, n)))}
want = {p["id"]: (p["title"], p["status"]) for p in blog["posts"] if p["kind"] == "post"}
users = {u["id"]: (u["username"], u["name"], u["email"]) for u in json.load(open(tmp + "/users.json"))}
want_users = {u["id"]: (u["login"], u["first"] + " " + u["last"], u["email"]) for u in blog["users"]}
sys.exit(0 if got == want and users == want_users else 1)
EOF
  # A change through the REST API, then the reset, then the change is gone.
  title77="$(python3 -c 'import json,sys; print([p["title"] for p in json.load(open(sys.argv[1]))["posts"] if p["id"] == 77][0])' "$BLOG")"
  new_id="$(C -b "$jar" -H "X-WP-Nonce: $nonce" -X POST "$url/wp-json/wp/v2/posts" -d title='Reset canary' -d status=publish \
    -d content='Made by verify.sh' | python3 -c 'import json,sys; print(json.load(sys.stdin).get("id", ""))')"
  C -b "$jar" -H "X-WP-Nonce: $nonce" -X POST "$url/wp-json/wp/v2/posts/77" -d title='Renamed by verify.sh' -o /dev/null
  check "$v: the REST API made post $new_id and renamed post 77" \
    bash -c "curl -s --noproxy '*' '$url/wp-json/wp/v2/posts/$new_id' | grep -q 'Reset canary' && curl -s --noproxy '*' '$url/wp-json/wp/v2/posts/77' | grep -q 'Renamed by verify.sh'"
  t0=$(date +%s.%N)
  C -X POST "$ctl/reset" >"$TMP/reset-$v.json"
  t1=$(date +%s.%N)
  check "$v: POST /reset answers success" grep -q '"success": true' "$TMP/reset-$v.json"
  check "$v: after the reset the new post is gone (REST 404)" \
    test "$(C -o /dev/null -w '%{http_code}' "$url/wp-json/wp/v2/posts/$new_id")" = 404
  check "$v: after the reset post 77 is '$title77' again" \
    grep -qF "\"rendered\":\"$title77\"" <(C "$url/wp-json/wp/v2/posts/77?_fields=title")
  check "$v: after the reset the session is gone (as on the fixture)" \
    test "$(C -b "$jar" -o /dev/null -w '%{http_code}' "$url/wp-admin/")" = 302
  echo "      reset: $(python3 -c 'import sys; print("%.3f" % (float(sys.argv[2]) - float(sys.argv[1])))' "$t0" "$t1") s round trip, $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["details"]; print("restore %s s, reset %s s" % (d["restore_s"], d["elapsed_s"]))' "$TMP/reset-$v.json")"
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
