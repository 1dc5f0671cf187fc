//! Site keys as WebArena names them in a task's `sites`, and the URL
//! placeholders that stand for their base URLs.
//!
//! WebArena's sites are `gitlab`, `shopping` (the Magento storefront),
//! `shopping_admin` (the Magento admin: its base URL, and so what
//! `__SHOPPING_ADMIN__` stands for, ends in `/admin`), `reddit`, `map` and
//! `wikipedia`, plus the `homepage`; skillshift's own fixture sites add
//! `magento` and `wordpress`. Placeholders are replaced across every string
//! of a task, in WebArena's order, as its `generate_test_data.py` does on the
//! whole config text.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::ids::{ParseIdError, Site};

/// A site a task runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SiteKey {
    Gitlab,
    Shopping,
    ShoppingAdmin,
    Reddit,
    Map,
    Wikipedia,
    Homepage,
    Magento,
    Wordpress,
}

impl SiteKey {
    /// Every key, in the order placeholders are replaced (WebArena's, then skillshift's).
    pub const ALL: &'static [SiteKey] = &[
        SiteKey::Gitlab,
        SiteKey::Reddit,
        SiteKey::Shopping,
        SiteKey::ShoppingAdmin,
        SiteKey::Wikipedia,
        SiteKey::Map,
        SiteKey::Homepage,
        SiteKey::Magento,
        SiteKey::Wordpress,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SiteKey::Gitlab => "gitlab",
            SiteKey::Shopping => "shopping",
            SiteKey::ShoppingAdmin => "shopping_admin",
            SiteKey::Reddit => "reddit",
            SiteKey::Map => "map",
            SiteKey::Wikipedia => "wikipedia",
            SiteKey::Homepage => "homepage",
            SiteKey::Magento => "magento",
            SiteKey::Wordpress => "wordpress",
        }
    }

    /// The placeholder of this site's base URL, e.g. `__SHOPPING_ADMIN__`.
    pub fn placeholder(self) -> &'static str {
        match self {
            SiteKey::Gitlab => "__GITLAB__",
            SiteKey::Shopping => "__SHOPPING__",
            SiteKey::ShoppingAdmin => "__SHOPPING_ADMIN__",
            SiteKey::Reddit => "__REDDIT__",
            SiteKey::Map => "__MAP__",
            SiteKey::Wikipedia => "__WIKIPEDIA__",
            SiteKey::Homepage => "__HOMEPAGE__",
            SiteKey::Magento => "__MAGENTO__",
            SiteKey::Wordpress => "__WORDPRESS__",
        }
    }

    /// The grid site this key is, if any.
    pub fn grid(self) -> Option<Site> {
        match self {
            SiteKey::Gitlab => Some(Site::Gitlab),
            SiteKey::Magento => Some(Site::Magento),
            SiteKey::Wordpress => Some(Site::Wordpress),
            _ => None,
        }
    }

    /// The key a placeholder stands for.
    pub fn of_placeholder(placeholder: &str) -> Option<SiteKey> {
        SiteKey::ALL.iter().copied().find(|k| k.placeholder() == placeholder)
    }
}

impl From<Site> for SiteKey {
    fn from(site: Site) -> Self {
        match site {
            Site::Gitlab => SiteKey::Gitlab,
            Site::Magento => SiteKey::Magento,
            Site::Wordpress => SiteKey::Wordpress,
        }
    }
}

impl PartialEq<Site> for SiteKey {
    fn eq(&self, other: &Site) -> bool {
        *self == SiteKey::from(*other)
    }
}

impl fmt::Display for SiteKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SiteKey {
    type Err = ParseIdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SiteKey::ALL.iter().copied().find(|k| k.as_str() == s).ok_or_else(|| ParseIdError {
            kind: "site",
            found: s.to_string(),
            expected: "gitlab, shopping, shopping_admin, reddit, map, wikipedia, homepage, magento or wordpress",
        })
    }
}

impl Serialize for SiteKey {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for SiteKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Base URLs by site, to resolve placeholders.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SiteBases(pub BTreeMap<SiteKey, String>);

impl SiteBases {
    pub fn insert(&mut self, key: SiteKey, base: &str) {
        self.0.insert(key, base.trim_end_matches('/').to_string());
    }

    /// `text` with every placeholder of a known base replaced, in WebArena's order.
    pub fn replace(&self, text: &str) -> String {
        let mut out = text.to_string();
        for key in SiteKey::ALL {
            if let Some(base) = self.0.get(key) {
                if out.contains(key.placeholder()) {
                    out = out.replace(key.placeholder(), base);
                }
            }
        }
        out
    }
}

/// The placeholders (`__NAME__`, upper case) in `text`, known or not.
pub fn placeholders_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("__") {
        let after = &rest[i + 2..];
        let name_len =
            after.chars().take_while(|c| c.is_ascii_uppercase() || *c == '_').map(char::len_utf8).sum::<usize>();
        let name = &after[..name_len];
        // `__A_B__`: the name runs up to the closing `__`.
        match name.find("__") {
            Some(end) if end > 0 => {
                out.push(format!("__{}__", &name[..end]));
                rest = &after[end + 2..];
            }
            _ if name_len > 0 && name.ends_with('_') => {
                rest = &after[name_len..];
            }
            _ => rest = after,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_print_and_map_to_the_grid() {
        assert_eq!("shopping_admin".parse::<SiteKey>().unwrap().placeholder(), "__SHOPPING_ADMIN__");
        assert!("misc".parse::<SiteKey>().is_err());
        assert_eq!(SiteKey::from(Site::Magento), SiteKey::Magento);
        assert_eq!(SiteKey::Gitlab.grid(), Some(Site::Gitlab));
        assert_eq!(SiteKey::of_placeholder("__MAP__"), Some(SiteKey::Map));
    }

    #[test]
    fn placeholders_resolve_in_webarena_order() {
        let mut b = SiteBases::default();
        b.insert(SiteKey::Shopping, "http://s:7770/");
        b.insert(SiteKey::ShoppingAdmin, "http://s:7780/admin");
        assert_eq!(
            b.replace("__SHOPPING_ADMIN__/x |AND| __SHOPPING__/y"),
            "http://s:7780/admin/x |AND| http://s:7770/y"
        );
        assert_eq!(
            placeholders_in("__SHOPPING_ADMIN__/a __FOO__ x__y __last_url__"),
            ["__SHOPPING_ADMIN__", "__FOO__"]
        );
    }
}
