<?php
// The router of one real WordPress instance under PHP's built-in server
// (`php -S HOST:PORT -t DOCROOT router.php`), started by scripts/real-sites.sh.
//
// * Debian's wp-config.php picks /etc/wordpress/config-NAME.php from
//   $_SERVER['WORDPRESS_CONFIG'] (what Apache's SetEnv would give); the built-in
//   server does not copy the environment into $_SERVER, so the router does, from
//   SKILLSHIFT_WP_CONFIG. Both instances can then share a host name.
// * Every response carries a Content-Security-Policy that keeps the browser on
//   this origin: WordPress 6.1's pages name off-site images (the block editor's
//   welcome guide loads its pictures from s.w.org, comments show Gravatar
//   avatars), and nothing may leave the machine.
// * Existing files are served as they are (PHP files run); any other path goes
//   to index.php, as Apache's rewrite rules would send it (pretty permalinks).

$config = getenv('SKILLSHIFT_WP_CONFIG');
if ($config !== false && preg_match('/^[a-zA-Z0-9-]+$/', $config)) {
    $_SERVER['WORDPRESS_CONFIG'] = $config;
}
header("Content-Security-Policy: default-src 'self' 'unsafe-inline' 'unsafe-eval' data: blob:");

$root = rtrim($_SERVER['DOCUMENT_ROOT'], '/');
$path = rawurldecode((string) parse_url($_SERVER['REQUEST_URI'], PHP_URL_PATH));
if (strpos($path, "\0") !== false || strpos($path, '/..') !== false) {
    http_response_code(400);
    return true;
}
$file = $root . $path;
if ($path !== '/' && is_dir($file)) {
    if (substr($path, -1) !== '/') {
        $query = parse_url($_SERVER['REQUEST_URI'], PHP_URL_QUERY);
        header('Location: ' . $path . '/' . ($query ? '?' . $query : ''), true, 301);
        return true;
    }
    if (is_file($file . 'index.php')) {
        return false;
    }
} elseif ($path !== '/' && is_file($file)) {
    return false;
}
$_SERVER['SCRIPT_NAME'] = '/index.php';
$_SERVER['PHP_SELF'] = '/index.php';
$_SERVER['SCRIPT_FILENAME'] = $root . '/index.php';
chdir($root);
require $root . '/index.php';
