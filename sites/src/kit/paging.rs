//! One page of a list, shared by every site's grids and list screens (each
//! site draws its own pager around it).

/// The items of page `page` (1-based, clamped to the pages there are) of
/// `per` items each, and the number of pages (at least 1).
pub fn paginate<T>(items: &[T], page: usize, per: usize) -> (&[T], usize) {
    let pages = items.len().div_ceil(per).max(1);
    let page = page.clamp(1, pages);
    let start = (page - 1) * per;
    (&items[start.min(items.len())..(start + per).min(items.len())], pages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_clamped_and_the_last_is_short() {
        let items: Vec<u32> = (1..=7).collect();
        assert_eq!(paginate(&items, 1, 3), (&[1, 2, 3][..], 3));
        assert_eq!(paginate(&items, 3, 3), (&[7][..], 3));
        assert_eq!(paginate(&items, 9, 3), (&[7][..], 3));
        assert_eq!(paginate(&items, 0, 3), (&[1, 2, 3][..], 3));
        assert_eq!(paginate::<u32>(&[], 1, 3), (&[][..], 1));
    }
}
