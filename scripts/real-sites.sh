#!/usr/bin/env bash
# Real WordPress for the harness (docs/real-sites.md): Debian's wordpress 6.1.9 with
# MariaDB and PHP's built-in server, as two loopback instances seeded with the
# fixture WordPress's data, v2 as shipped (the block editor) and v1 turned classic by
# a must-use plugin, each with an env-ctrl server on its port + 1 that resets it to
# the seeded database. Writes a worker `--sites` file and prints its absolute path
# as the last line of stdout (progress goes to stderr).
#
#   bash scripts/real-sites.sh wordpress           start (idempotent: a running instance is left alone)
#   bash scripts/real-sites.sh wordpress --stop    stop all it started (PHP, env-ctrl, mysqld if it started it)
#   bash scripts/real-sites.sh wordpress --status  what runs, as JSON lines
#
# Environment (defaults): REAL_SITES_HOST (127.0.0.1), REAL_WP_V1_PORT (9480),
# REAL_WP_V2_PORT (9482), env-ctrl on each port + 1; REAL_SITES_DIR (.real-sites in
# the repository: state, logs, pids, dumps); REAL_SITES_JSON (REAL_SITES_DIR/real-sites.json);
# REAL_WP_WORKERS (4, PHP_CLI_SERVER_WORKERS of each instance); REAL_WP_RESEED=1
# seeds again even when the seed's inputs have not changed.
# Installs only from Debian's packages (apt-get); downloads nothing else.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HERE="$ROOT/scripts/real-sites"
STATE="${REAL_SITES_DIR:-$ROOT/.real-sites}"
HOST="${REAL_SITES_HOST:-127.0.0.1}"
V1_PORT="${REAL_WP_V1_PORT:-9480}"
V2_PORT="${REAL_WP_V2_PORT:-9482}"
WORKERS="${REAL_WP_WORKERS:-4}"
# Debian packages, one per line (scripts/install-deps.sh installs the same list with the tests' others).
mapfile -t PACKAGES < "$HERE/packages"
WP_ROOT=/usr/share/wordpress
MYSQL_SOCK=/run/mysqld/mysqld.sock

say() { printf 'real-sites: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

usage() {
  sed -n '2,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

[ "${1:-}" = wordpress ] || usage
ACTION="${2:-start}"
case "$ACTION" in start | --stop | --status) ;; *) usage ;; esac
for p in "$V1_PORT" "$V2_PORT"; do
  [[ "$p" =~ ^[0-9]+$ ]] && [ "$p" -gt 0 ] && [ "$p" -lt 65535 ] || die "bad port '$p'"
done
[ "$V1_PORT" != "$V2_PORT" ] && [ "$((V1_PORT + 1))" != "$V2_PORT" ] && [ "$((V2_PORT + 1))" != "$V1_PORT" ] ||
  die "the v1 and v2 ports and their env-ctrl ports (port + 1) must differ"
[ "$(id -u)" = 0 ] || die "run as root (apt-get, mysqld and /etc/wordpress need it)"
mkdir -p "$STATE"
STATE="$(cd "$STATE" && pwd)"
OUT="${REAL_SITES_JSON:-$STATE/real-sites.json}"
RUN="$STATE/run"
LOGS="$STATE/logs"
mkdir -p "$RUN" "$LOGS"

# One invocation at a time.
exec 9>"$STATE/lock"
flock -w 300 9 || die "another scripts/real-sites.sh holds $STATE/lock"

port_of() { if [ "$1" = v1 ]; then echo "$V1_PORT"; else echo "$V2_PORT"; fi; }

# A process this script started, by its pid file: alive and still the command it
# was (its command line contains the marker), so a reused pid is never signalled.
alive() { # name marker
  local f="$RUN/$1.pid" pid
  [ -f "$f" ] || return 1
  pid="$(cat "$f")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$2"
}

# Starts a command as the leader of a new session (so it and the children it
# forks, such as PHP's server workers, form one process group to stop), its pid in
# RUN/NAME.pid, its output in LOGS/NAME.log. Every descriptor above stderr is
# closed first: a daemon that kept one its caller opened (a lock held with
# `flock FILE cmd`, a pipe a CI runner reads to its end) would hold it until --stop.
spawn() { # name env... -- cmd...
  local name="$1"; shift
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  setsid -f env "${envs[@]}" bash -c 'echo $$ >"$0"
    for fd in /proc/$$/fd/*; do fd=${fd##*/}; [ "$fd" -gt 2 ] && eval "exec $fd>&-"; done
    exec "$@"' "$RUN/$name.pid" "$@" >>"$LOGS/$name.log" 2>&1 </dev/null
  local i
  for i in $(seq 50); do [ -s "$RUN/$name.pid" ] && return 0; sleep 0.1; done
  die "$name did not start (see $LOGS/$name.log)"
}

# Stops a spawned process group: TERM, then KILL after 10 s.
stop_group() { # name marker
  local name="$1" pid i
  if alive "$name" "$2"; then
    pid="$(cat "$RUN/$name.pid")"
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL -- "-$pid" 2>/dev/null || true; fi
    # The group's other members (PHP's workers) may outlive the leader by a moment.
    for i in $(seq 50); do pgrep -g "$pid" >/dev/null 2>&1 || break; sleep 0.1; done
    if pgrep -g "$pid" >/dev/null 2>&1; then kill -KILL -- "-$pid" 2>/dev/null || true; fi
    say "stopped $name (process group $pid)"
  fi
  rm -f "$RUN/$name.pid"
}

listening() { ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; }

mysql_up() { mysqladmin --socket="$MYSQL_SOCK" -u root --connect-timeout=2 ping >/dev/null 2>&1; }

wait_http() { # url seconds
  local i
  for i in $(seq $(($2 * 5))); do
    [ "$(curl -s --noproxy '*' -o /dev/null -w '%{http_code}' --max-time 5 "$1" || true)" = 200 ] && return 0
    sleep 0.2
  done
  return 1
}

stop_all() {
  local v
  for v in v1 v2; do
    stop_group "ctl-$v" env_ctrl.py
    stop_group "php-$v" "$STATE/$v/root"
  done
  if [ -f "$RUN/mysqld.started" ]; then
    if mysql_up; then
      mysqladmin --socket="$MYSQL_SOCK" -u root shutdown >/dev/null 2>&1 || true
    fi
    local i
    for i in $(seq 300); do alive mysqld mysqld_safe || break; sleep 0.1; done
    stop_group mysqld mysqld_safe
    rm -f "$RUN/mysqld.started"
    say "stopped mysqld (this script had started it)"
  else
    say "mysqld left as it was (this script did not start it)"
  fi
  local left=()
  for p in "$V1_PORT" "$((V1_PORT + 1))" "$V2_PORT" "$((V2_PORT + 1))"; do
    if listening "$p"; then left+=("$p"); fi
  done
  [ "${#left[@]}" = 0 ] || die "ports still listening after the stop: ${left[*]}"
  say "stopped; no listener on ports $V1_PORT-$((V1_PORT + 1)), $V2_PORT-$((V2_PORT + 1))"
}

status() {
  local v
  for v in v1 v2; do
    local port; port="$(port_of "$v")"
    local php=false ctl=false
    alive "php-$v" "$STATE/$v/root" && php=true
    alive "ctl-$v" env_ctrl.py && ctl=true
    printf '{"image": "wordpress-%s", "url": "http://%s:%s", "php": %s, "env_ctrl": %s}\n' "$v" "$HOST" "$port" "$php" "$ctl"
  done
  printf '{"mysqld": %s, "started_here": %s}\n' "$(mysql_up && echo true || echo false)" \
    "$([ -f "$RUN/mysqld.started" ] && echo true || echo false)"
}

case "$ACTION" in
  --stop) stop_all; exit 0 ;;
  --status) status; exit 0 ;;
esac

T0=$(date +%s.%N)
elapsed() { python3 -c "import sys; print('%.1f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$T0" "$(date +%s.%N)"; }

# 1. Debian's packages, only those missing (apt-get update once, before the install).
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  say "installing from Debian's packages: ${missing[*]}"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >>"$LOGS/apt.log" 2>&1 ||
    die "apt-get install failed (see $LOGS/apt.log)"
  say "installed in $(elapsed) s"
fi
for c in php mysqld_safe mysql mysqldump mysqladmin curl ss setsid flock python3; do
  command -v "$c" >/dev/null || die "$c is missing"
done
WP_VERSION="$(php -r 'include "/usr/share/wordpress/wp-includes/version.php"; echo $wp_version;')"

# 2. MariaDB: the running server if there is one, else one started here (no systemd).
if ! mysql_up; then
  say "starting mysqld (mysqld_safe)"
  mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld
  spawn mysqld -- mysqld_safe --skip-syslog
  touch "$RUN/mysqld.started"
  for _ in $(seq 300); do mysql_up && break; sleep 0.1; done
  mysql_up || die "mysqld did not answer within 30 s (see $LOGS/mysqld.log)"
fi
root_sql() { mysql --socket="$MYSQL_SOCK" -u root --batch --skip-column-names -e "$1"; }

# 3. The fixture's blog, from the port of sites/src/wordpress/data.rs, checked
# against the task files before it is used.
python3 "$HERE/fixture_blog.py" --check "$ROOT"/data/tasks/wordpress.v1.json "$ROOT"/data/tasks/wordpress.v2.json >&2 ||
  die "the port of the fixture's seed disagrees with the task files"
python3 "$HERE/fixture_blog.py" >"$STATE/blog.json.tmp" && mv "$STATE/blog.json.tmp" "$STATE/blog.json"

sha() { cat "$@" | sha256sum | cut -d' ' -f1; }

# 4. One instance: docroot, config, database, seed and dump, PHP server, env-ctrl.
instance() {
  local v="$1"
  local port; port="$(port_of "$v")"
  local ctl_port=$((port + 1))
  local url="http://$HOST:$port" ctl="http://$HOST:$ctl_port"
  local name="skillshift-wp-$v" db="skillshift_wp_$v"
  local dir="$STATE/$v"
  local docroot="$dir/root"
  local content="$docroot/wp-content"
  mkdir -p "$dir"

  # The docroot: Debian's WordPress by symlinks, with a wp-content of its own
  # (the themes and plugins Debian ships, this instance's must-use plugins, uploads).
  mkdir -p "$docroot" "$content/themes" "$content/mu-plugins" "$content/uploads"
  local e
  for e in "$WP_ROOT"/*; do
    [ "$(basename "$e")" = wp-content ] || ln -sfn "$e" "$docroot/$(basename "$e")"
  done
  for e in "$WP_ROOT"/wp-content/themes/*/; do ln -sfn "${e%/}" "$content/themes/$(basename "$e")"; done
  ln -sfn "$WP_ROOT/wp-content/plugins" "$content/plugins"
  ln -sfn "$WP_ROOT/wp-content/languages" "$content/languages"
  rm -f "$content/mu-plugins/"*.php
  cp "$HERE/mu-plugins/skillshift-offline.php" "$HERE/mu-plugins/skillshift-$v.php" "$content/mu-plugins/"

  # Debian's wp-config.php reads /etc/wordpress/config-NAME.php (router.php names it).
  local pass="skillshift-$v" keys="" k
  for k in AUTH_KEY SECURE_AUTH_KEY LOGGED_IN_KEY NONCE_KEY AUTH_SALT SECURE_AUTH_SALT LOGGED_IN_SALT NONCE_SALT; do
    keys+="define('$k', '$(printf '%s' "$name-$k" | sha256sum | cut -d' ' -f1)');"$'\n'
  done
  mkdir -p /etc/wordpress
  cat >"/etc/wordpress/config-$name.php.tmp" <<EOF
<?php
// Written by scripts/real-sites.sh (skillshift): the real wordpress-$v on $url.
define('SKILLSHIFT_VERSION', '$v');
define('DB_NAME', '$db');
define('DB_USER', '$db');
define('DB_PASSWORD', '$pass');
define('DB_HOST', 'localhost');
define('DB_CHARSET', 'utf8mb4');
define('WP_HOME', '$url');
define('WP_SITEURL', '$url');
define('WP_CONTENT_DIR', '$content');
define('WP_CONTENT_URL', '$url/wp-content');
define('DISABLE_WP_CRON', true);
define('WP_HTTP_BLOCK_EXTERNAL', true);
define('AUTOMATIC_UPDATER_DISABLED', true);
define('WP_AUTO_UPDATE_CORE', false);
define('WP_ALLOW_MULTISITE', false);
define('WP_DEBUG', false);
$keys\$table_prefix = 'wp_';
EOF
  mv "/etc/wordpress/config-$name.php.tmp" "/etc/wordpress/config-$name.php"
  umask 077
  printf '[client]\nuser=%s\npassword=%s\nsocket=%s\n' "$db" "$pass" "$MYSQL_SOCK" >"$dir/my.cnf"
  umask 022

  # Servers of an earlier start on other ports (or host) are stopped first.
  if [ "$(cat "$dir/listen" 2>/dev/null)" != "$HOST:$port" ]; then
    stop_group "ctl-$v" env_ctrl.py
    stop_group "php-$v" "$docroot"
  fi
  local running=false
  if alive "php-$v" "$docroot" && wait_http "$url/" 1; then running=true; fi

  # Seed when the seed's inputs changed (or there is no dump yet).
  local key; key="$(printf '%s %s %s' "$v" "$WP_VERSION" "$(sha "$STATE/blog.json" "$HERE/seed.php")")"
  local seeded=false
  if [ "${REAL_WP_RESEED:-0}" = 1 ] || [ ! -s "$dir/seed.sql" ] || [ "$(cat "$dir/seed.key" 2>/dev/null)" != "$key" ]; then
    # The env-ctrl server holds the old dump in memory: it goes too.
    stop_group "ctl-$v" env_ctrl.py
    stop_group "php-$v" "$docroot"
    running=false
    say "wordpress-$v: installing and seeding the database $db"
    local t0; t0=$(date +%s.%N)
    root_sql "DROP DATABASE IF EXISTS \`$db\`; CREATE DATABASE \`$db\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
      CREATE USER IF NOT EXISTS '$db'@'localhost' IDENTIFIED BY '$pass'; ALTER USER '$db'@'localhost' IDENTIFIED BY '$pass';
      GRANT ALL PRIVILEGES ON \`$db\`.* TO '$db'@'localhost'; FLUSH PRIVILEGES;"
    SKILLSHIFT_WP_CONFIG="$name" SKILLSHIFT_WP_URL="$url" php "$HERE/seed.php" install >"$LOGS/seed-$v.log" 2>&1 ||
      die "wordpress-$v: the install failed (see $LOGS/seed-$v.log)"
    SKILLSHIFT_WP_CONFIG="$name" SKILLSHIFT_WP_URL="$url" php "$HERE/seed.php" seed "$STATE/blog.json" \
      >"$dir/seed-counts.json" 2>>"$LOGS/seed-$v.log" || die "wordpress-$v: the seed failed (see $LOGS/seed-$v.log)"
    mysqldump --defaults-extra-file="$dir/my.cnf" --single-transaction --skip-dump-date --no-tablespaces "$db" \
      >"$dir/seed.sql.tmp" || die "wordpress-$v: mysqldump failed"
    mv "$dir/seed.sql.tmp" "$dir/seed.sql"
    printf '%s' "$key" >"$dir/seed.key"
    seeded=true
    say "wordpress-$v: seeded in $(python3 -c "import sys; print('%.1f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$t0" "$(date +%s.%N)") s: $(cat "$dir/seed-counts.json")"
  fi
  if ! $running && ! $seeded; then
    # A start is the seeded state: the database (and its user) from the dump.
    root_sql "CREATE DATABASE IF NOT EXISTS \`$db\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
      CREATE USER IF NOT EXISTS '$db'@'localhost' IDENTIFIED BY '$pass'; ALTER USER '$db'@'localhost' IDENTIFIED BY '$pass';
      GRANT ALL PRIVILEGES ON \`$db\`.* TO '$db'@'localhost'; FLUSH PRIVILEGES;"
    mysql --defaults-extra-file="$dir/my.cnf" --database="$db" <"$dir/seed.sql" || die "wordpress-$v: restoring the dump failed"
  fi

  # What this instance is: the digest of everything that decides its pages and data.
  DIGEST="sha256:$(printf '%s\n' "$key" "$(sha "$content/mu-plugins/"*.php "$HERE/router.php")" | sha256sum | cut -d' ' -f1)"
  python3 - "$dir/config.json" "$v" "$url" "$ctl" "$db" "$dir/seed.sql" "$WP_VERSION" "$DIGEST" <<'EOF'
import json, sys
path, v, url, ctl, db, dump, wp, digest = sys.argv[1:]
theme = "twentytwentythree" if v == "v2" else "twentytwentyone"
json.dump({"env": "wordpress-" + v, "site": "wordpress", "version": v, "url": url, "env_ctrl": ctl,
           "wordpress": wp, "theme": theme, "database": db, "snapshot": dump, "digest": digest,
           "editor": "block" if v == "v2" else "classic"}, open(path, "w"), indent=1)
EOF

  if ! $running; then
    listening "$port" && die "port $port is taken by another process (set REAL_WP_${v^^}_PORT)"
    spawn "php-$v" SKILLSHIFT_WP_CONFIG="$name" PHP_CLI_SERVER_WORKERS="$WORKERS" -- \
      php -S "$HOST:$port" -t "$docroot" "$HERE/router.php"
    wait_http "$url/" 30 || die "wordpress-$v did not answer on $url within 30 s (see $LOGS/php-$v.log)"
    printf '%s' "$HOST:$port" >"$dir/listen"
    say "wordpress-$v: serving $url"
  fi
  if ! alive "ctl-$v" env_ctrl.py; then
    listening "$ctl_port" && die "port $ctl_port is taken by another process"
    spawn "ctl-$v" -- python3 "$HERE/env_ctrl.py" --listen "$HOST:$ctl_port" --site "$url" --db "$db" \
      --mysql-defaults "$dir/my.cnf" --dump "$dir/seed.sql" --config-json "$dir/config.json"
    wait_http "$ctl/health" 30 || die "the env-ctrl of wordpress-$v did not answer on $ctl within 30 s"
    say "wordpress-$v: env-ctrl on $ctl"
  fi
  eval "DIGEST_$v=\$DIGEST"
}

instance v1
instance v2

# 5. The worker's --sites file (worker/src/sites.rs SitesConfig / SiteEntry).
python3 - "$OUT" "$HOST" "$V1_PORT" "$V2_PORT" "$DIGEST_v1" "$DIGEST_v2" <<'EOF'
import json, os, sys
out, host, p1, p2, d1, d2 = sys.argv[1:]
def login(v2):
    steps = [
        {"action": "goto", "url": "__SITE__/wp-login.php"},
        {"action": "fill", "target": {"role": "textbox", "name": "Username or Email Address"}, "text": "admin"},
        {"action": "fill", "target": {"role": "textbox", "name": "Password"}, "text": "admin1234"},
        {"action": "click", "target": {"role": "button", "name": "Log In"}},
    ]
    if v2:  # shifts.md W12: the administration email verification after every login
        steps.append({"action": "click", "target": {"role": "button", "name": "The email is correct"}})
    # Signed in: the admin bar's "Log Out" (a refused or lost login is then a site_login error, not a task failure).
    steps.append({"action": "read", "target": {"role": "link", "name": "Log Out"}})
    return steps
def entry(port, digest, v2):
    port = int(port)
    return {"url": "http://%s:%d" % (host, port), "env_ctrl": "http://%s:%d" % (host, port + 1),
            "digest": digest, "login": login(v2)}
cfg = {"backend": "env-ctrl", "reset_policy": "after-mutation", "reset_timeout_s": 60,
       "sites": {"wordpress-v1": entry(p1, d1, False), "wordpress-v2": entry(p2, d2, True)}}
tmp = out + ".tmp"
with open(tmp, "w") as f:
    json.dump(cfg, f, indent=2)
    f.write("\n")
os.replace(tmp, out)
EOF
say "ready in $(elapsed) s"
echo "$(cd "$(dirname "$OUT")" && pwd)/$(basename "$OUT")"
