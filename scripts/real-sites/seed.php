<?php
// Installs and seeds one real WordPress instance offline, from the PHP CLI, with
// WordPress's own API (scripts/real-sites.sh runs it; see docs/real-sites.md).
//
//   php seed.php install            wp_install(): the site, admin/admin1234
//   php seed.php seed BLOG.json     the fixture's blog (fixture_blog.py's JSON), ids kept
//
// Environment: SKILLSHIFT_WP_CONFIG (Debian's config-NAME.php to use) and
// SKILLSHIFT_WP_URL (the instance's base URL, for HTTP_HOST). The instance's
// version (v1 or v2) is the SKILLSHIFT_VERSION its config file defines.

if (PHP_SAPI !== 'cli') {
    exit(1);
}
$mode = isset($argv[1]) ? $argv[1] : '';
$url = getenv('SKILLSHIFT_WP_URL');
$config = getenv('SKILLSHIFT_WP_CONFIG');
if (!in_array($mode, array('install', 'seed'), true) || !$url || !$config) {
    fwrite(STDERR, "usage: SKILLSHIFT_WP_CONFIG=NAME SKILLSHIFT_WP_URL=URL php seed.php install|seed [BLOG.json]\n");
    exit(2);
}
$u = parse_url($url);
$_SERVER['WORDPRESS_CONFIG'] = $config;
$_SERVER['HTTP_HOST'] = $u['host'] . (isset($u['port']) ? ':' . $u['port'] : '');
$_SERVER['SERVER_NAME'] = $u['host'];
$_SERVER['SERVER_PORT'] = isset($u['port']) ? (string) $u['port'] : '80';
$_SERVER['REQUEST_URI'] = '/';
$_SERVER['REQUEST_METHOD'] = 'GET';
$_SERVER['SCRIPT_NAME'] = '/index.php';
$_SERVER['PHP_SELF'] = '/index.php';

function fail($msg) {
    fwrite(STDERR, "seed.php: $msg\n");
    exit(1);
}

if ($mode === 'install') {
    define('WP_INSTALLING', true);
    require '/usr/share/wordpress/wp-load.php';
    require_once ABSPATH . 'wp-admin/includes/upgrade.php';
    if (is_blog_installed()) {
        fail('the database ' . DB_NAME . ' already holds a WordPress site');
    }
    $r = wp_install('Skillshift Journal', 'admin', 'admin@example.com', true, '', wp_slash('admin1234'), '');
    if (empty($r['user_id'])) {
        fail('wp_install did not create the admin');
    }
    echo json_encode(array('installed' => $r['url'], 'wordpress' => $GLOBALS['wp_version'])), "\n";
    exit(0);
}

require '/usr/share/wordpress/wp-load.php';
require_once ABSPATH . 'wp-admin/includes/admin.php';
global $wpdb;

$blog = json_decode((string) file_get_contents(isset($argv[2]) ? $argv[2] : ''), true);
if (!is_array($blog) || empty($blog['posts'])) {
    fail('no blog JSON (run fixture_blog.py)');
}
$v2 = SKILLSHIFT_VERSION === 'v2';

// The install's own content goes: its posts (Hello world!, Sample Page, Privacy
// Policy), its comment, so that every id below is the fixture's.
foreach ($wpdb->get_col("SELECT ID FROM $wpdb->posts") as $id) {
    wp_delete_post((int) $id, true);
}
foreach ($wpdb->get_col("SELECT comment_ID FROM $wpdb->comments") as $id) {
    wp_delete_comment((int) $id, true);
}
if ($wpdb->get_var("SELECT COUNT(*) FROM $wpdb->users") != 1) {
    fail('expected only the admin user after the install');
}
$wpdb->query("ALTER TABLE $wpdb->posts AUTO_INCREMENT = 1");
$wpdb->query("ALTER TABLE $wpdb->comments AUTO_INCREMENT = 1");
$wpdb->query("ALTER TABLE $wpdb->users AUTO_INCREMENT = 2");
wp_defer_term_counting(true);
wp_defer_comment_counting(true);

// Options (the fixture's `siteurl` is the instance's own URL: WP_SITEURL).
foreach ($blog['options'] as $k => $v) {
    if ($k !== 'siteurl') {
        update_option($k, $v);
    }
}
update_option('new_admin_email', $blog['options']['admin_email']);
update_option('permalink_structure', '/%year%/%monthnum%/%day%/%postname%/');
update_option('show_avatars', '0');
update_option('comment_previously_approved', '0');
update_option('fresh_site', '0');
update_option('timezone_string', 'UTC');
update_option('gmt_offset', '0');

// Users: the admin is WordPress's user 1; the others are inserted in id order
// into an empty table whose next id is 2.
foreach ($blog['users'] as $user) {
    $fields = array(
        'user_email' => $user['email'],
        'first_name' => $user['first'],
        'last_name' => $user['last'],
        'display_name' => $user['first'] . ' ' . $user['last'],
        'nickname' => $user['login'],
        'role' => $user['role'],
    );
    if ($user['id'] == 1) {
        $id = wp_update_user(array('ID' => 1) + $fields);
    } else {
        $id = wp_insert_user(array(
            'user_login' => $user['login'],
            'user_pass' => 'skillshift',
            'user_registered' => '2023-01-01 00:00:00',
        ) + $fields);
    }
    if (is_wp_error($id) || $id != $user['id']) {
        fail('user ' . $user['login'] . ' got id ' . (is_wp_error($id) ? $id->get_error_message() : $id));
    }
}

// Terms, with the fixture's ids (categories 1-12, tags 100-119) as term and
// term-taxonomy ids; Uncategorized is the install's term 1.
$wpdb->query("DELETE FROM $wpdb->term_relationships");
$wpdb->query("DELETE FROM $wpdb->term_taxonomy");
$wpdb->query("DELETE FROM $wpdb->termmeta");
$wpdb->query("DELETE FROM $wpdb->terms");
foreach (array('category' => $blog['categories'], 'post_tag' => $blog['tags']) as $tax => $terms) {
    foreach ($terms as $t) {
        $ok = $wpdb->insert($wpdb->terms, array('term_id' => $t['id'], 'name' => $t['name'], 'slug' => $t['slug'], 'term_group' => 0));
        $ok = $ok && $wpdb->insert($wpdb->term_taxonomy, array(
            'term_taxonomy_id' => $t['id'], 'term_id' => $t['id'], 'taxonomy' => $tax,
            'description' => $t['description'], 'parent' => $t['parent'] ? $t['parent'] : 0, 'count' => 0,
        ));
        if (!$ok) {
            fail("term {$t['name']}: " . $wpdb->last_error);
        }
    }
}
wp_cache_flush();
update_option('default_category', 1);

// Posts and pages, each with its fixture id (import_id). Dates are the
// fixture's days; the time of day grows with the id, so WordPress's order by
// date is the fixture's order by id. v2 stores its text as a paragraph block
// (as the block editor writes it), v1 as 4.9's classic editor does, plain.
$privacy = 0;
foreach ($blog['posts'] as $p) {
    $when = sprintf('%s %02d:%02d:%02d', $p['date'], 8 + intdiv($p['id'], 3600), intdiv($p['id'], 60) % 60, $p['id'] % 60);
    $text = $p['content'];
    if ($v2) {
        $text = "<!-- wp:paragraph -->\n<p>" . htmlspecialchars($text, ENT_NOQUOTES) . "</p>\n<!-- /wp:paragraph -->";
    }
    $args = array(
        'import_id' => $p['id'],
        'post_type' => $p['kind'],
        'post_title' => $p['title'],
        'post_name' => $p['slug'],
        'post_content' => $text,
        'post_status' => $p['status'],
        'post_author' => $p['author'],
        'post_date' => $when,
        'post_date_gmt' => $when,
    );
    if ($p['kind'] === 'post') {
        $args['post_category'] = $p['categories'];
    }
    $id = wp_insert_post(wp_slash($args), true);
    if (is_wp_error($id) || $id != $p['id']) {
        fail('post ' . $p['title'] . ' got id ' . (is_wp_error($id) ? $id->get_error_message() : $id));
    }
    if ($p['tags']) {
        $r = wp_set_object_terms($id, array_map('intval', $p['tags']), 'post_tag');
        if (is_wp_error($r)) {
            fail("tags of post $id: " . $r->get_error_message());
        }
    }
    if ($p['status'] === 'trash') {
        add_post_meta($id, '_wp_trash_meta_status', 'publish');
        add_post_meta($id, '_wp_trash_meta_time', strtotime($when . ' UTC'));
    }
    if ($p['kind'] === 'page' && $p['title'] === 'Privacy Policy') {
        $privacy = $id;
    }
}
update_option('wp_page_for_privacy_policy', $privacy);
// Publishing queued pings and enclosures for WP-Cron (disabled here): dropped.
$wpdb->query("DELETE FROM $wpdb->postmeta WHERE meta_key IN ('_pingme', '_encloseme')");
wp_clear_scheduled_hook('do_pings');
$wpdb->query("UPDATE $wpdb->posts SET post_modified = post_date, post_modified_gmt = post_date_gmt");

// Comments, in id order into an empty table whose next id is 1.
$approved = array('approved' => '1', 'pending' => '0', 'spam' => 'spam', 'trash' => 'trash');
foreach ($blog['comments'] as $c) {
    $when = sprintf('%s %02d:%02d:%02d', $c['date'], 8 + intdiv($c['id'], 3600), intdiv($c['id'], 60) % 60, $c['id'] % 60);
    $id = wp_insert_comment(wp_slash(array(
        'comment_post_ID' => $c['post'],
        'comment_author' => $c['author'],
        'comment_author_email' => $c['email'],
        'comment_author_url' => '',
        'comment_content' => $c['content'],
        'comment_approved' => $approved[$c['status']],
        'comment_date' => $when,
        'comment_date_gmt' => $when,
        'comment_type' => 'comment',
        'user_id' => 0,
    )));
    if ($id != $c['id']) {
        fail("comment {$c['id']} got id " . var_export($id, true));
    }
}
wp_defer_comment_counting(false);
wp_defer_term_counting(false);
wp_update_term_count_now($wpdb->get_col("SELECT term_taxonomy_id FROM $wpdb->term_taxonomy WHERE taxonomy = 'category'"), 'category');
wp_update_term_count_now($wpdb->get_col("SELECT term_taxonomy_id FROM $wpdb->term_taxonomy WHERE taxonomy = 'post_tag'"), 'post_tag');
foreach ($wpdb->get_col("SELECT ID FROM $wpdb->posts") as $id) {
    wp_update_comment_count_now((int) $id);
}

// The theme: a classic one for v1 (Customize / Widgets / Menus), the block
// theme 6.1 ships as its default for v2 (Appearance > Editor), shifts.md W11.
$theme = $v2 ? 'twentytwentythree' : 'twentytwentyone';
if (!wp_get_theme($theme)->exists()) {
    fail("theme $theme is not installed (Debian's wordpress-theme-$theme)");
}
switch_theme($theme);
update_option('fresh_site', '0');
flush_rewrite_rules(false);
wp_cache_flush();

// What was seeded, counted back from the database.
$count = function ($sql) use ($wpdb) {
    return (int) $wpdb->get_var($sql);
};
echo json_encode(array(
    'version' => SKILLSHIFT_VERSION,
    'users' => $count("SELECT COUNT(*) FROM $wpdb->users"),
    'posts' => $count("SELECT COUNT(*) FROM $wpdb->posts WHERE post_type = 'post'"),
    'pages' => $count("SELECT COUNT(*) FROM $wpdb->posts WHERE post_type = 'page'"),
    'categories' => $count("SELECT COUNT(*) FROM $wpdb->term_taxonomy WHERE taxonomy = 'category'"),
    'tags' => $count("SELECT COUNT(*) FROM $wpdb->term_taxonomy WHERE taxonomy = 'post_tag'"),
    'comments' => $count("SELECT COUNT(*) FROM $wpdb->comments"),
    'max_post_id' => $count("SELECT MAX(ID) FROM $wpdb->posts"),
    'theme' => get_stylesheet(),
)), "\n";
