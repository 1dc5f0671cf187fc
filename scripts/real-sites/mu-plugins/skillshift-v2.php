<?php
/**
 * Plugin Name: Skillshift v2 (WordPress 6.1 as shipped, its screens pinned)
 * Description: Loaded by the v2 instance only. Changes no screen of WordPress 6.1;
 * it only makes W12's periodic "Administration email verification" screen come
 * after every login, instead of once in six months counted from the last
 * confirmation (stored in the database, so the first attempt's confirmation would
 * hide it from every later attempt until a reset). The fixture v2 shows it after
 * every login too, and the login steps in real-sites.json press "The email is
 * correct". See docs/real-sites.md.
 */

add_filter('pre_option_admin_email_lifespan', function () {
    return 1;
});
