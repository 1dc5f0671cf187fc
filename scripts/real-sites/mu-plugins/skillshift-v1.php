<?php
/**
 * Plugin Name: Skillshift v1 (classic WordPress)
 * Description: Loaded by the v1 instance only. Turns WordPress 6.1 back into the
 * classic-editor WordPress that shifts.md calls v1 (4.9), as far as configuration
 * can: W1-W9 by the classic editor and its title placeholder, W12 by switching the
 * admin email verification off, W13 by restoring 4.9's Quick Edit link. W11 is the
 * classic theme scripts/real-sites/seed.php activates plus the classic Widgets
 * screen. W10 needs nothing (6.1 still says "Add New"). See docs/real-sites.md.
 */

// W2-W9: the classic editor for every post type (core's own filters; the block
// editor, its welcome guide, its pre-publish panel and its full-screen mode go).
add_filter('use_block_editor_for_post', '__return_false', 100);
add_filter('use_block_editor_for_post_type', '__return_false', 100);

// W1: the title placeholder of 4.9 (6.1's classic editor says "Add title").
add_filter('enter_title_here', function () {
    return 'Enter title here';
});

// W11 (v1 side): Appearance > Widgets is the classic widgets screen, as in 4.9
// (a classic theme's widgets are block-based since 5.8).
add_filter('use_widgets_block_editor', '__return_false');

// W12: no periodic "Administration email verification" screen after login.
add_filter('admin_email_check_interval', '__return_zero');

// W13: the posts and pages lists' "Quick Edit" row action is a link, as in 4.9
// (`<a href="#" class="editinline" aria-label="...">`), not 6.1's button with
// aria-expanded. inline-edit-post.js binds `.editinline` either way.
function skillshift_v1_quick_edit_link($actions) {
    if (isset($actions['inline hide-if-no-js'])) {
        $actions['inline hide-if-no-js'] = preg_replace(
            '~^<button type="button" class="button-link editinline" (aria-label="[^"]*") aria-expanded="false">(.*)</button>$~s',
            '<a href="#" class="editinline" $1>$2</a>',
            $actions['inline hide-if-no-js']
        );
    }
    return $actions;
}
add_filter('post_row_actions', 'skillshift_v1_quick_edit_link', 100);
add_filter('page_row_actions', 'skillshift_v1_quick_edit_link', 100);
add_action('admin_print_footer_scripts-edit.php', function () {
    // 4.9's handler returned false; 6.1's does not, so the link would follow "#".
    echo "<script>jQuery(function($){ $('#the-list').on('click', 'a.editinline', function(e){ e.preventDefault(); }); });</script>\n";
});
