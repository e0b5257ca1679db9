//! The usage chart of the account page: credits charged and refunded per day as an inline SVG
//! drawn on the server (no script), with a title, a description and the same figures as text
//! beside it. Geometry only: the template writes the elements (and escapes every text).

use svc_services::activity::UsageHistory;

/// The drawing's coordinate space; the SVG scales to the width it is given (`viewBox`).
pub(crate) const WIDTH: u32 = 340;
pub(crate) const HEIGHT: u32 = 170;
const LEFT: f64 = 30.0;
const RIGHT: f64 = 6.0;
const TOP: f64 = 10.0;
const BOTTOM: f64 = 22.0;

/// One day's bars: charged from the base line up, refunded stacked on it.
pub(crate) struct Bar {
    pub x: String,
    pub width: String,
    pub charged_y: String,
    pub charged_height: String,
    pub refunded_y: String,
    pub refunded_height: String,
    /// "2026-11-20: 3 charged, 1 refunded" (the tooltip and the text figure).
    pub label: String,
}

/// A day with something to say, as a row of the figures beside the chart.
pub(crate) struct DayFigure {
    pub date: String,
    pub charged: i64,
    pub refunded: i64,
    pub bought: i64,
    pub granted: i64,
    pub taken_back: i64,
    pub released: i64,
    /// "svc_test_AbCd1234: 3 charged, 1 refunded; ..."
    pub keys: String,
}

pub(crate) struct UsageChart {
    pub width: u32,
    pub height: u32,
    pub title: String,
    pub desc: String,
    pub bars: Vec<Bar>,
    /// The top of the scale, written at the top of the axis.
    pub max: i64,
    pub max_y: String,
    pub base_y: String,
    pub axis_x: String,
    pub right_x: String,
    pub label_y: String,
    pub from: String,
    pub to: String,
    pub charged: i64,
    pub refunded: i64,
    pub bought: i64,
    pub granted: i64,
    /// Taken back for refunded or disputed payments, and given back for disputes won.
    pub taken_back: i64,
    pub released: i64,
    /// Days with any usage, newest first.
    pub figures: Vec<DayFigure>,
}

fn n(v: f64) -> String {
    format!("{v:.1}")
}

fn credits(n: i64) -> String {
    if n == 1 {
        "1 credit".into()
    } else {
        format!("{n} credits")
    }
}

impl UsageChart {
    pub(crate) fn of(h: &UsageHistory) -> Self {
        let days = h.days.len().max(1) as f64;
        let max = h
            .days
            .iter()
            .map(|d| d.charged + d.refunded)
            .max()
            .unwrap_or(0)
            .max(1);
        let plot_w = f64::from(WIDTH) - LEFT - RIGHT;
        let plot_h = f64::from(HEIGHT) - TOP - BOTTOM;
        let base = TOP + plot_h;
        let slot = plot_w / days;
        let width = (slot * 0.7).max(1.0);
        let scale = |v: i64| v as f64 / max as f64 * plot_h;
        let bars = h
            .days
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let ch = scale(d.charged);
                let rh = scale(d.refunded);
                Bar {
                    x: n(LEFT + slot * i as f64 + (slot - width) / 2.0),
                    width: n(width),
                    charged_y: n(base - ch),
                    charged_height: n(ch),
                    refunded_y: n(base - ch - rh),
                    refunded_height: n(rh),
                    label: format!(
                        "{}: {} charged, {} refunded",
                        d.date,
                        credits(d.charged),
                        credits(d.refunded)
                    ),
                }
            })
            .collect();
        let busiest = h
            .days
            .iter()
            .filter(|d| d.charged > 0)
            .max_by_key(|d| (d.charged, std::cmp::Reverse(d.date)));
        let desc = format!(
            "Bars show the credits charged for completed actions (dark blue) and refunded for \
             failed ones (orange, stacked on top) each UTC day from {} to {}. In all, {} \
             charged, {} refunded, {} bought and {} granted{}.{}",
            h.from,
            h.to,
            credits(h.charged),
            credits(h.refunded),
            credits(h.bought),
            credits(h.granted),
            if h.taken_back + h.released > 0 {
                format!(
                    "; {} taken back for refunded or disputed payments and {} given back",
                    credits(h.taken_back),
                    credits(h.released)
                )
            } else {
                String::new()
            },
            match busiest {
                Some(d) => format!(
                    " The busiest day was {} with {} charged.",
                    d.date,
                    credits(d.charged)
                ),
                None => " No action was charged in this period.".into(),
            }
        );
        let figures = h
            .days
            .iter()
            .rev()
            .filter(|d| {
                d.charged + d.refunded + d.bought + d.granted + d.taken_back + d.released > 0
            })
            .map(|d| DayFigure {
                date: d.date.to_string(),
                charged: d.charged,
                refunded: d.refunded,
                bought: d.bought,
                granted: d.granted,
                taken_back: d.taken_back,
                released: d.released,
                keys: d
                    .by_key
                    .iter()
                    .map(|k| {
                        format!(
                            "{}: {} charged, {} refunded",
                            k.key_prefix
                                .as_ref()
                                .map_or("a deleted key".to_owned(), |p| format!("{p}…")),
                            k.charged,
                            k.refunded
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
            })
            .collect();
        Self {
            width: WIDTH,
            height: HEIGHT,
            title: format!("Credits per day, {} to {}", h.from, h.to),
            desc,
            bars,
            max,
            max_y: n(TOP + 4.0),
            base_y: n(base),
            axis_x: n(LEFT - 2.0),
            right_x: n(f64::from(WIDTH) - RIGHT),
            label_y: n(f64::from(HEIGHT) - 6.0),
            from: h.from.format("%b %-d").to_string(),
            to: h.to.format("%b %-d").to_string(),
            charged: h.charged,
            refunded: h.refunded,
            bought: h.bought,
            granted: h.granted,
            taken_back: h.taken_back,
            released: h.released,
            figures,
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::NaiveDate;
    use svc_services::activity::UsageDay;

    use super::*;

    fn day(d: u32, charged: i64, refunded: i64) -> UsageDay {
        UsageDay {
            date: NaiveDate::from_ymd_opt(2026, 11, d).unwrap(),
            charged,
            refunded,
            bought: 0,
            granted: 0,
            taken_back: 0,
            released: 0,
            by_key: Vec::new(),
        }
    }

    fn history(days: Vec<UsageDay>) -> UsageHistory {
        UsageHistory::of_days(days[0].date, days[days.len() - 1].date, days)
    }

    #[test]
    fn bars_fit_the_drawing_and_the_tallest_reaches_the_top() {
        let h = history(vec![day(1, 0, 0), day(2, 3, 1), day(3, 2, 0)]);
        let chart = UsageChart::of(&h);
        assert_eq!(chart.max, 4);
        let f = |s: &str| s.parse::<f64>().unwrap();
        for b in &chart.bars {
            assert!(f(&b.x) >= LEFT && f(&b.x) + f(&b.width) <= f64::from(WIDTH) - RIGHT);
            assert!(f(&b.refunded_y) >= TOP - 0.05);
        }
        assert_eq!(chart.bars[1].refunded_y, n(TOP));
        assert!(
            chart
                .desc
                .contains("busiest day was 2026-11-02 with 3 credits charged")
        );
        assert_eq!(chart.figures.len(), 2, "days without usage are left out");
        assert_eq!(chart.figures[0].date, "2026-11-03");
        assert!(!chart.desc.contains("taken back"), "{}", chart.desc);
    }

    /// A day when a payment was refunded or disputed is a day with something to say, and the
    /// description says what was taken back and given back.
    #[test]
    fn payments_taken_back_are_figures_too() {
        let mut days = vec![day(1, 0, 0), day(2, 0, 0)];
        days[1].taken_back = 1000;
        days[1].released = 400;
        let h = history(days);
        let chart = UsageChart::of(&h);
        assert_eq!(chart.figures.len(), 1);
        assert_eq!(
            (chart.figures[0].taken_back, chart.figures[0].released),
            (1000, 400)
        );
        assert!(
            chart.desc.contains(
                "1000 credits taken back for refunded or disputed payments and 400 credits given back"
            ),
            "{}",
            chart.desc
        );
    }
}
