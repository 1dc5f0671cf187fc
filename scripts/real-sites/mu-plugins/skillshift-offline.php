<?php
/**
 * Plugin Name: Skillshift offline
 * Description: Loaded by both real instances (v1 and v2). Keeps WordPress 6.1 on
 * this machine and its state a function of the database alone: no mail, no calls
 * home, no emoji CDN, pretty permalinks under PHP's built-in server, and the block
 * editor's preferences kept per browser session (as the fixture keeps them), and
 * no login language menu (Debian's wordpress-l10n adds one that upstream's
 * package, with no languages installed, does not show).
 * Part of scripts/real-sites.sh; see docs/real-sites.md.
 */

// Debian installs WordPress's translations (wordpress-l10n), which puts a
// language menu and its "Change" button under the login form; WordPress as
// downloaded has none, nor has the fixture.
add_filter('login_display_language_dropdown', '__return_false');

// The login form focuses and selects its username field 200 ms after its script runs
// (wp_attempt_focus). The harness signs in by filling the form (set-up, not a measured
// skill), and on a loaded machine that timer can move the focus between the password
// field's focus and its text, which then lands in the username field and the sign-in
// fails (4 of 478 attempts of one full column). No autofocus: the form is as shown,
// and nothing moves the caret but the one filling it.
add_filter('enable_login_autofocus', '__return_false');

// No mail leaves the machine (there is no MTA; wp_mail would only fail).
add_filter('pre_wp_mail', '__return_true');

// No update checks, no calls to api.wordpress.org (WP_HTTP_BLOCK_EXTERNAL refuses
// them already; removing the checks keeps admin pages from trying on every load).
foreach (array('_maybe_update_core', '_maybe_update_plugins', '_maybe_update_themes') as $check) {
    remove_action('admin_init', $check);
}
remove_action('init', 'wp_schedule_update_checks');
remove_action('wp_version_check', 'wp_version_check');
remove_action('wp_update_plugins', 'wp_update_plugins');
remove_action('wp_update_themes', 'wp_update_themes');
add_filter('pre_site_transient_update_core', function () {
    return (object) array('last_checked' => time(), 'version_checked' => $GLOBALS['wp_version'], 'updates' => array());
});
add_filter('pre_site_transient_update_plugins', function () {
    return (object) array('last_checked' => time(), 'response' => array(), 'translations' => array());
});
add_filter('pre_site_transient_update_themes', function () {
    return (object) array('last_checked' => time(), 'response' => array(), 'translations' => array());
});
// The dashboard's "WordPress Events and News" needs the network: not shown.
add_action('wp_dashboard_setup', function () {
    remove_meta_box('dashboard_primary', 'dashboard', 'side');
});
// The browser and PHP version nags ask api.wordpress.org.
add_filter('pre_site_transient_browser_' . md5(isset($_SERVER['HTTP_USER_AGENT']) ? $_SERVER['HTTP_USER_AGENT'] : ''), '__return_empty_array');

// No emoji script (it loads Twemoji from s.w.org) and no dns-prefetch of s.w.org.
remove_action('wp_head', 'print_emoji_detection_script', 7);
remove_action('admin_print_scripts', 'print_emoji_detection_script');
remove_action('wp_print_styles', 'print_emoji_styles');
remove_action('admin_print_styles', 'print_emoji_styles');
add_filter('emoji_svg_url', '__return_false');

// PHP's built-in server rewrites every path to index.php (router.php), as
// mod_rewrite would: permalinks need no "index.php/" prefix.
add_filter('got_url_rewrite', '__return_true');

// The block editor's preferences (its welcome guide's "seen", the sidebar, ...)
// are stored per user in the database and preloaded into each new browser. Here
// the preload is always a new user's, so every fresh browser starts from the
// defaults (the welcome guide shows, shifts.md W8) and what a session changes
// lives in that browser's localStorage only: the fixture keeps "Get started" per
// session too, and a read-only task that dismisses the guide changes no state
// the next attempt sees.
add_filter('get_user_metadata', function ($value, $object_id, $meta_key, $single) {
    global $wpdb;
    if ($meta_key === $wpdb->get_blog_prefix() . 'persisted_preferences') {
        return $single ? array('') : array();
    }
    return $value;
}, 10, 4);
