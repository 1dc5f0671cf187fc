//! The Magento fixture's seeded store: products, categories, customers,
//! orders, reviews and CMS pages, generated from a fixed seed with the
//! in-code PRNG so every build holds byte-identical data (about the size of
//! a small real store: hundreds of each main type).

use crate::kit::rng::Rng;
use crate::kit::text::{contains_ci, date_of, slug};

pub const N_PRODUCTS: usize = 300;
pub const N_CUSTOMERS: usize = 250;
pub const N_ORDERS: usize = 400;
pub const N_REVIEWS: usize = 240;

#[derive(Debug, Clone, PartialEq)]
pub struct Product {
    pub id: u32,
    pub name: String,
    pub sku: String,
    pub price_cents: u64,
    pub qty: u32,
    pub enabled: bool,
    pub category: u32,
    pub description: String,
    pub url_key: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Category {
    pub id: u32,
    pub name: String,
    pub parent: Option<u32>,
    pub enabled: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Customer {
    pub id: u32,
    pub first: String,
    pub last: String,
    pub email: String,
    pub group: String,
    pub phone: String,
    pub city: String,
    pub region: String,
    pub zip: String,
    pub created: String,
    pub remote_assistance: bool,
}

impl Customer {
    pub fn name(&self) -> String {
        format!("{} {}", self.first, self.last)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct OrderItem {
    pub product: u32,
    pub name: String,
    pub sku: String,
    pub qty: u32,
    pub price_cents: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Order {
    pub id: u32,
    pub increment: String,
    pub customer: u32,
    pub date: String,
    pub status: String,
    pub items: Vec<OrderItem>,
    pub shipping_cents: u64,
    pub comments: Vec<String>,
}

impl Order {
    pub fn subtotal(&self) -> u64 {
        self.items.iter().map(|i| i.price_cents * u64::from(i.qty)).sum()
    }
    pub fn grand_total(&self) -> u64 {
        self.subtotal() + self.shipping_cents
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Review {
    pub id: u32,
    pub product: u32,
    pub nickname: String,
    pub title: String,
    pub detail: String,
    pub status: String,
    pub rating: u32,
    pub created: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CmsPage {
    pub id: u32,
    pub title: String,
    pub identifier: String,
    pub active: bool,
    pub content: String,
    pub modified: String,
}

/// A "Login as Customer" log entry (v2).
#[derive(Debug, Clone, PartialEq)]
pub struct LoginLogEntry {
    pub customer: u32,
    pub time: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Store {
    pub products: Vec<Product>,
    pub categories: Vec<Category>,
    pub customers: Vec<Customer>,
    pub orders: Vec<Order>,
    pub reviews: Vec<Review>,
    pub pages: Vec<CmsPage>,
    pub login_log: Vec<LoginLogEntry>,
}

pub const GROUPS: &[&str] = &["General", "Wholesale", "Retailer"];
pub const ORDER_STATUSES: &[&str] =
    &["Pending", "Processing", "Complete", "Complete", "Complete", "Canceled", "On Hold", "Closed"];
pub const REVIEW_STATUSES: &[&str] = &["Approved", "Approved", "Pending", "Not Approved"];

const PREFIXES: &[&str] = &[
    "Joust",
    "Strive",
    "Crown",
    "Wayfarer",
    "Rival",
    "Fusion",
    "Impulse",
    "Voyage",
    "Driven",
    "Overnight",
    "Endeavor",
    "Savvy",
    "Compete",
    "Affirm",
    "Sprite",
    "Harmony",
    "Orestes",
    "Breathe",
    "Cassius",
    "Helios",
    "Juno",
    "Atlas",
    "Zephyr",
    "Marco",
];
const TYPES: &[(&str, u32)] = &[
    ("Duffle Bag", 13),
    ("Shoulder Pack", 13),
    ("Messenger Bag", 13),
    ("Backpack", 13),
    ("Water Bottle", 14),
    ("Yoga Strap", 14),
    ("Running Tank", 6),
    ("Crewneck Tee", 6),
    ("Hoodie", 10),
    ("Rain Jacket", 10),
    ("Training Short", 11),
    ("Track Pant", 11),
    ("Bra Top", 7),
    ("Capri", 8),
    ("Sport Watch", 15),
];
const FIRST: &[&str] = &[
    "Veronica", "Roni", "Alex", "Bob", "Grace", "Jane", "Samantha", "Lily", "Daniel", "Lucia", "Adam", "Sophie",
    "Matt", "Olivia", "Ethan", "Julia", "Noah", "Emma", "Liam", "Mia", "Oscar", "Chloe", "Hugo", "Nina", "Ravi",
    "Aisha", "Kenji", "Marta", "Tomas", "Ingrid", "Pablo", "Fatima", "Victor", "Helen", "Igor", "Priya",
];
const LAST: &[&str] = &[
    "Costello", "Nguyen", "Johnson", "Jiang", "Kowalski", "Smith", "Garcia", "Brown", "Miller", "Davis", "Martin",
    "Walker", "Young", "Allen", "Wright", "Scott", "Hill", "Green", "Adams", "Baker", "Nelson", "Carter", "Mitchell",
    "Perez", "Roberts", "Turner", "Phillips", "Campbell", "Parker", "Evans", "Edwards", "Collins", "Stewart",
];
const CITIES: &[(&str, &str, &str)] = &[
    ("Austin", "Texas", "78701"),
    ("Denver", "Colorado", "80202"),
    ("Seattle", "Washington", "98101"),
    ("Boston", "Massachusetts", "02108"),
    ("Chicago", "Illinois", "60601"),
    ("Portland", "Oregon", "97201"),
    ("Miami", "Florida", "33101"),
    ("Phoenix", "Arizona", "85001"),
    ("Atlanta", "Georgia", "30301"),
    ("Columbus", "Ohio", "43004"),
];
const REVIEW_TITLES: &[&str] = &[
    "Great value",
    "Fits perfectly",
    "Not what I expected",
    "Love it",
    "Solid build",
    "Runs small",
    "Too heavy",
    "Would buy again",
    "Comfortable all day",
    "Color faded",
    "Excellent quality",
    "Just okay",
];
const CMS_PAGES: &[&str] = &[
    "Home Page",
    "About us",
    "Customer Service",
    "Privacy and Cookie Policy",
    "404 Not Found",
    "Enable Cookies",
    "Shipping Policy",
    "Returns and Exchanges",
    "Size Guide",
    "Store Locator",
    "Careers",
    "Press Room",
    "Gift Cards",
    "Loyalty Program",
    "Sustainability",
    "Wholesale Accounts",
    "Contact Us",
    "Terms of Use",
    "Spring Sale",
    "Summer Collection",
    "Yoga Essentials",
    "Running Club",
    "Gear Care Tips",
    "Student Discount",
];

/// The top of the category tree and the leaves products belong to.
fn categories() -> Vec<Category> {
    let c = |id, name: &str, parent| Category { id, name: name.to_string(), parent, enabled: true };
    vec![
        c(1, "Root Catalog", None),
        c(2, "Default Category", Some(1)),
        c(3, "What's New", Some(2)),
        c(4, "Women", Some(2)),
        c(5, "Men", Some(2)),
        c(6, "Women Tops", Some(4)),
        c(7, "Women Bottoms", Some(4)),
        c(8, "Bras & Tanks", Some(6)),
        c(9, "Gear", Some(2)),
        c(10, "Jackets", Some(5)),
        c(11, "Men Bottoms", Some(5)),
        c(12, "Sale", Some(2)),
        c(13, "Bags", Some(9)),
        c(14, "Fitness Equipment", Some(9)),
        c(15, "Watches", Some(9)),
        c(16, "Training", Some(2)),
    ]
}

impl Store {
    /// The seeded store (the same on every call).
    pub fn seed() -> Store {
        let mut rng = Rng::scrambled(0x4d41_4745);
        let mut combos: Vec<(usize, usize)> =
            (0..PREFIXES.len()).flat_map(|p| (0..TYPES.len()).map(move |t| (p, t))).collect();
        rng.shuffle(&mut combos);
        let products: Vec<Product> = combos
            .iter()
            .take(N_PRODUCTS)
            .enumerate()
            .map(|(i, &(p, t))| {
                let id = i as u32 + 1;
                let name = format!("{} {}", PREFIXES[p], TYPES[t].0);
                let code: String = TYPES[t].0.split(' ').filter_map(|w| w.chars().next()).collect();
                Product {
                    id,
                    sku: format!("24-{code}{id:03}"),
                    price_cents: (15 + rng.below(180) as u64) * 100 + [0, 0, 50, 99][rng.below(4)],
                    qty: if rng.chance(12) { rng.below(10) as u32 } else { 10 + rng.below(190) as u32 },
                    enabled: !rng.chance(6),
                    category: TYPES[t].1,
                    description: format!("The {name} is built for everyday training and travel."),
                    url_key: slug(&name),
                    name,
                }
            })
            .collect();
        let mut people: Vec<(usize, usize)> =
            (0..FIRST.len()).flat_map(|f| (0..LAST.len()).map(move |l| (f, l))).collect();
        rng.shuffle(&mut people);
        let customers: Vec<Customer> = people
            .iter()
            .take(N_CUSTOMERS)
            .enumerate()
            .map(|(i, &(f, l))| {
                let (city, region, zip) = *rng.pick(CITIES);
                Customer {
                    id: i as u32 + 1,
                    first: FIRST[f].to_string(),
                    last: LAST[l].to_string(),
                    email: format!("{}.{}@example.com", FIRST[f].to_lowercase(), LAST[l].to_lowercase()),
                    group: GROUPS[rng.below(GROUPS.len())].to_string(),
                    phone: format!("555-{:04}", rng.below(10_000)),
                    city: city.to_string(),
                    region: region.to_string(),
                    zip: zip.to_string(),
                    created: date_of(18_993 + rng.below(700) as i64),
                    remote_assistance: rng.chance(30),
                }
            })
            .collect();
        let orders: Vec<Order> = (0..N_ORDERS)
            .map(|i| {
                let id = i as u32 + 1;
                let items = (0..1 + rng.below(3))
                    .map(|_| {
                        let p = &products[rng.below(products.len())];
                        OrderItem {
                            product: p.id,
                            name: p.name.clone(),
                            sku: p.sku.clone(),
                            qty: 1 + rng.below(3) as u32,
                            price_cents: p.price_cents,
                        }
                    })
                    .collect::<Vec<_>>();
                let units: u32 = items.iter().map(|it| it.qty).sum();
                Order {
                    id,
                    increment: format!("{:09}", id),
                    customer: 1 + rng.below(customers.len()) as u32,
                    date: date_of(19_200 + (i as i64 * 500) / N_ORDERS as i64),
                    status: ORDER_STATUSES[rng.below(ORDER_STATUSES.len())].to_string(),
                    shipping_cents: 500 * u64::from(units),
                    items,
                    comments: Vec::new(),
                }
            })
            .collect();
        let reviews: Vec<Review> = (0..N_REVIEWS)
            .map(|i| {
                let c = &customers[rng.below(customers.len())];
                Review {
                    id: i as u32 + 1,
                    product: 1 + rng.below(products.len() / 2) as u32,
                    nickname: c.first.clone(),
                    title: format!("{} #{}", rng.pick(REVIEW_TITLES), i + 1),
                    detail: "I have been using it for a few weeks now.".to_string(),
                    status: REVIEW_STATUSES[rng.below(REVIEW_STATUSES.len())].to_string(),
                    rating: 1 + rng.below(5) as u32,
                    created: date_of(19_300 + rng.below(300) as i64),
                }
            })
            .collect();
        let pages = CMS_PAGES
            .iter()
            .enumerate()
            .map(|(i, t)| CmsPage {
                id: i as u32 + 1,
                title: t.to_string(),
                identifier: if i == 0 { "home".to_string() } else { slug(t) },
                active: i < 18 || rng.chance(50),
                content: format!("<p>{t}: content managed by the Luma store team.</p>"),
                modified: date_of(19_400 + i as i64 * 3),
            })
            .collect();
        Store { products, categories: categories(), customers, orders, reviews, pages, login_log: Vec::new() }
    }

    pub fn product(&self, id: u32) -> Option<&Product> {
        self.products.iter().find(|p| p.id == id)
    }
    pub fn customer(&self, id: u32) -> Option<&Customer> {
        self.customers.iter().find(|c| c.id == id)
    }
    pub fn order(&self, id: u32) -> Option<&Order> {
        self.orders.iter().find(|o| o.id == id)
    }
    pub fn category(&self, id: u32) -> Option<&Category> {
        self.categories.iter().find(|c| c.id == id)
    }

    /// Products matching the grid's keyword search (name or SKU).
    pub fn search_products(&self, kw: &str) -> Vec<&Product> {
        self.products.iter().filter(|p| kw.is_empty() || has(&p.name, kw) || has(&p.sku, kw)).collect()
    }
    /// Customers matching the grid's keyword search (name, email, city).
    pub fn search_customers(&self, kw: &str) -> Vec<&Customer> {
        self.customers
            .iter()
            .filter(|c| kw.is_empty() || has(&c.name(), kw) || has(&c.email, kw) || has(&c.city, kw))
            .collect()
    }
    /// Orders matching the grid's keyword search (number, bill-to name, email), newest first.
    pub fn search_orders(&self, kw: &str) -> Vec<&Order> {
        let mut v: Vec<&Order> = self
            .orders
            .iter()
            .filter(|o| {
                let c = self.customer(o.customer);
                kw.is_empty() || has(&o.increment, kw) || c.is_some_and(|c| has(&c.name(), kw) || has(&c.email, kw))
            })
            .collect();
        v.reverse();
        v
    }
    /// Reviews matching a keyword (title, nickname, product name); `pending` limits to pending ones.
    pub fn search_reviews(&self, kw: &str, pending: bool) -> Vec<&Review> {
        self.reviews
            .iter()
            .filter(|r| !pending || r.status == "Pending")
            .filter(|r| {
                kw.is_empty()
                    || has(&r.title, kw)
                    || has(&r.nickname, kw)
                    || self.product(r.product).is_some_and(|p| has(&p.name, kw))
            })
            .collect()
    }
    pub fn search_pages(&self, kw: &str) -> Vec<&CmsPage> {
        self.pages.iter().filter(|p| kw.is_empty() || has(&p.title, kw) || has(&p.identifier, kw)).collect()
    }

    /// The path of category names from the root's child down to `id`.
    pub fn category_path(&self, id: u32) -> String {
        let mut names = Vec::new();
        let mut cur = self.category(id);
        while let Some(c) = cur {
            if c.parent.is_some() {
                names.push(c.name.clone());
            }
            cur = c.parent.and_then(|p| self.category(p));
        }
        names.reverse();
        names.join(" / ")
    }
}

fn has(hay: &str, kw: &str) -> bool {
    contains_ci(hay, kw)
}

/// `$1,234.56`.
pub fn money(cents: u64) -> String {
    let dollars = (cents / 100).to_string();
    let mut grouped = String::new();
    for (i, ch) in dollars.chars().enumerate() {
        if i > 0 && (dollars.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(ch);
    }
    format!("${grouped}.{:02}", cents % 100)
}

/// The price as typed in a form: `34.00`.
pub fn price_input(cents: u64) -> String {
    format!("{}.{:02}", cents / 100, cents % 100)
}

/// Parses a typed price (`34`, `34.5`, `$1,034.50`) into cents.
pub fn parse_price(s: &str) -> Option<u64> {
    let t: String = s.trim().chars().filter(|c| *c != '$' && *c != ',').collect();
    let (whole, frac) = t.split_once('.').unwrap_or((&t, ""));
    let whole: u64 = whole.parse().ok()?;
    let frac = match frac.len() {
        0 => 0,
        1 => frac.parse::<u64>().ok()? * 10,
        2 => frac.parse::<u64>().ok()?,
        _ => return None,
    };
    Some(whole * 100 + frac)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_is_deterministic_and_sized() {
        let a = Store::seed();
        assert_eq!(a, Store::seed());
        assert_eq!(a.products.len(), N_PRODUCTS);
        assert_eq!(a.orders.len(), N_ORDERS);
        let mut names: Vec<_> = a.products.iter().map(|p| &p.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), N_PRODUCTS, "product names are unique");
    }

    #[test]
    fn money_formats_and_parses() {
        assert_eq!(money(123_456), "$1,234.56");
        assert_eq!(money(5), "$0.05");
        assert_eq!(parse_price("$1,034.5"), Some(103_450));
        assert_eq!(parse_price("abc"), None);
    }
}
