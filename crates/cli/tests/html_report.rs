//! `coloc report --html` and `coloc compare --html`: the page of a real two-app
//! run, of a simulated 64-CPU run and of a comparison, parsed as XML and checked
//! for structure; then both run pages opened in headless Chromium, whose
//! screenshots must show the core map and whose console must stay silent.
//!
//! Also `coloc report` on a comparison's directory: the same table `compare`
//! printed.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use common::{coloc_output, text};
use quick_xml::events::Event;
use quick_xml::Reader;

fn ok(args: &[&str]) -> (String, String) {
    let o = coloc_output(args);
    let (out, err) = text(&o);
    assert!(o.status.success(), "coloc {args:?} failed:\n{err}\n{out}");
    (out, err)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// An element of the page: name, attributes, text directly inside, children.
#[derive(Debug, Default)]
struct Node {
    name: String,
    attrs: BTreeMap<String, String>,
    text: String,
    children: Vec<Node>,
}

impl Node {
    fn attr(&self, k: &str) -> Option<&str> {
        self.attrs.get(k).map(String::as_str)
    }

    fn has_class(&self, class: &str) -> bool {
        self.attr("class")
            .is_some_and(|c| c.split_whitespace().any(|c| c == class))
    }

    /// Every element below (and including) this one, depth first.
    fn all(&self) -> Vec<&Node> {
        let mut out = vec![self];
        for c in &self.children {
            out.extend(c.all());
        }
        out
    }

    fn find(&self, pred: impl Fn(&Node) -> bool) -> Vec<&Node> {
        self.all().into_iter().filter(|n| pred(n)).collect()
    }

    /// All text inside, children included.
    fn all_text(&self) -> String {
        let mut t = self.text.clone();
        for c in &self.children {
            t += &c.all_text();
        }
        t
    }
}

/// Parses the page as XML (it is written to be well-formed), failing on any error.
fn parse(page: &str) -> Node {
    let mut reader = Reader::from_str(page);
    let mut stack = vec![Node::default()];
    let open = |e: &quick_xml::events::BytesStart| Node {
        name: e.name().as_ref().to_string(),
        attrs: e
            .attributes()
            .map(|a| {
                let a = a.expect("well-formed attribute");
                (
                    a.key.as_ref().to_string(),
                    a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                        .expect("attribute value")
                        .into_owned(),
                )
            })
            .collect(),
        ..Node::default()
    };
    loop {
        match reader.read_event().expect("the page is well-formed XML") {
            Event::Start(e) => stack.push(open(&e)),
            Event::Empty(e) => {
                let n = open(&e);
                stack.last_mut().unwrap().children.push(n);
            }
            Event::End(_) => {
                let n = stack.pop().unwrap();
                stack.last_mut().expect("balanced").children.push(n);
            }
            Event::Text(t) => stack.last_mut().unwrap().text += t.as_ref(),
            Event::GeneralRef(r) => {
                let c = match r.as_ref() {
                    "amp" => '&',
                    "lt" => '<',
                    "gt" => '>',
                    "quot" => '"',
                    "apos" => '\'',
                    _ => r.resolve_char_ref().unwrap().expect("a known reference"),
                };
                stack.last_mut().unwrap().text.push(c);
            }
            Event::Eof => break,
            _ => {}
        }
    }
    assert_eq!(stack.len(), 1, "unclosed elements");
    stack.pop().unwrap()
}

/// Runs `coloc report DIR --html PAGE`; returns the text report and the page.
fn report_html(dir: &Path, page: &Path) -> (String, String) {
    let (out, err) = ok(&["report", s(dir), "--html", s(page)]);
    assert!(err.contains("html: "), "{err}");
    (out, std::fs::read_to_string(page).unwrap())
}

/// What every run page has: a core map with one row per CPU, coloured stretches
/// whose hover text names the app, arrival and exit markers, per-app charts, the
/// text report's metrics and the topology.
fn check_run_page(page: &str, text_report: &str, cpus: usize, apps: &[&str]) -> Node {
    let doc = parse(page);
    let html = &doc.children[0];
    assert_eq!(html.name, "html");
    let maps = doc.find(|n| n.name == "svg" && n.has_class("coremap"));
    assert_eq!(maps.len(), 1);
    let rows = maps[0].find(|n| n.name == "g" && n.has_class("cpu"));
    assert_eq!(rows.len(), cpus, "one row per CPU");
    let runs = maps[0].find(|n| n.name == "rect" && n.has_class("run"));
    assert!(!runs.is_empty(), "no coloured stretch");
    for app in apps {
        assert!(
            runs.iter().any(|r| r
                .children
                .iter()
                .any(|t| t.name == "title" && t.text.contains(&format!(": {app} (")))),
            "no stretch of {app}"
        );
    }
    for r in &runs {
        let title = r.find(|n| n.name == "title");
        assert_eq!(title.len(), 1, "every stretch has a hover text");
        assert!(title[0].text.starts_with("cpu "), "{}", title[0].text);
        assert!(title[0].text.contains("thread"), "{}", title[0].text);
    }
    for (kind, n) in [("arrive", apps.len()), ("exit", apps.len())] {
        let lane = maps[0].find(|m| m.name == "g" && m.attr("data-kind") == Some(kind));
        assert_eq!(lane.len(), 1);
        assert_eq!(lane[0].children.len(), n, "{kind} markers");
    }
    let plans = maps[0].find(|m| m.name == "g" && m.attr("data-kind") == Some("plan"));
    assert!(!plans[0].children.is_empty(), "no plan marker");
    assert!(plans[0].children[0].all_text().contains("plan on arrival"));
    let charts: Vec<&str> = doc
        .find(|n| n.name == "svg" && n.has_class("chart"))
        .iter()
        .filter_map(|n| n.attr("data-quantity"))
        .collect();
    for q in ["cores", "granted", "switches"] {
        assert!(charts.contains(&q), "no {q} chart in {charts:?}");
    }
    // The metrics are the text report's, verbatim.
    let metrics = doc.find(|n| n.name == "section" && n.has_class("metrics"));
    let shown = metrics[0].find(|n| n.name == "pre")[0].all_text();
    let table: String = text_report
        .lines()
        .skip(1)
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(shown, table);
    let topo = doc.find(|n| n.name == "section" && n.has_class("topology"));
    assert!(!topo[0].all_text().is_empty());
    assert_eq!(
        doc.find(|n| n.name == "p" && n.has_class("downsample"))
            .len(),
        1
    );
    // Self-contained: nothing to fetch.
    for n in doc.all() {
        for k in ["src", "href"] {
            assert!(n.attr(k).is_none(), "{} has {k}", n.name);
        }
    }
    doc
}

/// A simulated run of two 32-thread apps on the 64-CPU NuPoCo platform under
/// `native`, with 50 ms epochs: about 540 observation intervals, downsampled.
fn sim64_page(dir: &Path) -> (PathBuf, String, String) {
    let w = dir.join("sim64.toml");
    std::fs::write(
        &w,
        "name = \"sim64\"\nepoch = \"50ms\"\n\
         [[app]]\nname = \"ep\"\nmodel = \"ep\"\nthreads = 32\n\
         [[app]]\nname = \"kmeans\"\nmodel = \"kmeans\"\nthreads = 32\narrive_at = \"1s\"\n",
    )
    .unwrap();
    let out = dir.join("sim64");
    ok(&[
        "sim",
        s(&w),
        "--platform",
        "nupoco-amd64",
        "--policy",
        "native",
        "--out",
        s(&out),
    ]);
    let page = dir.join("sim64.html");
    let (text, html) = report_html(&out, &page);
    (page, text, html)
}

/// A real run of two apps (barrier kernels, 2 threads each) under `equal`.
fn real_page(dir: &Path) -> (PathBuf, String, String, usize) {
    let w = dir.join("real.toml");
    std::fs::write(
        &w,
        "name = \"real2\"\n\
         [[app]]\nname = \"a\"\ncommand = [\"kernel:barrier\", \"--regions\", \"10000\", \"--work\", \"20000\"]\nthreads = 2\n\
         [[app]]\nname = \"b\"\ncommand = [\"kernel:compute\", \"--iters\", \"6000000\"]\nthreads = 2\n",
    )
    .unwrap();
    let out = dir.join("real");
    ok(&["run", s(&w), "--policy", "equal", "--out", s(&out)]);
    let file = std::fs::File::open(out.join("trace.jsonl")).unwrap();
    let trace = coloc_model::Trace::read(std::io::BufReader::new(file)).unwrap();
    let cpus = trace.header.topology.cpus().len();
    let page = dir.join("real.html");
    let (text, html) = report_html(&out, &page);
    (page, text, html, cpus)
}

#[test]
fn a_simulated_64_cpu_run_has_a_downsampled_page() {
    let dir = tempfile::tempdir().unwrap();
    let (_, text, html) = sim64_page(dir.path());
    let doc = check_run_page(&html, &text, 64, &["ep", "kmeans"]);
    let note = doc.find(|n| n.has_class("downsample"))[0].all_text();
    assert!(note.starts_with("Downsampled: "), "{note}");
    assert!(note.contains("as 300 time bins"), "{note}");
    // OpenMP models report DoP, progress and phases.
    for q in ["dop", "progress", "parallel"] {
        assert!(
            !doc.find(|n| n.attr("data-quantity") == Some(q)).is_empty(),
            "no {q} chart"
        );
    }
}

#[test]
fn a_real_two_app_run_has_a_page() {
    let dir = tempfile::tempdir().unwrap();
    let (_, text, html, cpus) = real_page(dir.path());
    check_run_page(&html, &text, cpus, &["a", "b"]);
}

/// Two apps on the 2-CPU platform, short.
const TINY: &str = "name = \"tiny\"\n\
    [[app]]\nname = \"bs\"\nmodel = \"blackscholes\"\nthreads = 2\n\
    [[app]]\nname = \"sc\"\nmodel = \"streamcluster\"\nthreads = 2\n";

#[test]
fn report_on_a_comparison_directory_reports_the_comparison() {
    let dir = tempfile::tempdir().unwrap();
    let w = dir.path().join("tiny.toml");
    std::fs::write(&w, TINY).unwrap();
    let cmp = dir.path().join("cmp");
    let page = dir.path().join("cmp.html");
    let (out, _) = ok(&[
        "compare",
        s(&w),
        "--sim",
        "kvm-2cpu",
        "--policies",
        "native,equal",
        "--repeat",
        "2",
        "--out",
        s(&cmp),
        "--html",
        s(&page),
    ]);
    let table = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| l.starts_with('|') || l.starts_with("makespan:"))
            .map(String::from)
            .collect()
    };
    let (report, _) = ok(&["report", s(&cmp)]);
    assert_eq!(table(&report), table(&out), "{report}\nvs\n{out}");
    assert!(
        report.contains("runs: native 2, equal 2; baseline native"),
        "{report}"
    );
    // Another baseline on request.
    let (other, _) = ok(&["report", s(&cmp), "--baseline", "equal"]);
    assert!(other.contains("against equal"), "{other}");
    // JSON carries the per-run samples.
    let (json, _) = ok(&["report", s(&cmp), "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        v["policies"][1]["samples"]["makespan"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    // The comparison's page: the table, distributions, NTT, a run per policy.
    let doc = parse(&std::fs::read_to_string(&page).unwrap());
    let shown = doc.find(|n| n.name == "pre" && n.has_class("table"))[0].all_text();
    assert!(shown.lines().any(|l| l.starts_with("| equal ")), "{shown}");
    let figures: Vec<&str> = doc
        .find(|n| n.has_class("dist"))
        .iter()
        .filter_map(|n| n.attr("data-figure"))
        .collect();
    assert_eq!(figures, ["makespan", "art", "app-bs", "app-sc"]);
    for f in doc.find(|n| n.has_class("dist")) {
        // Two runs of each of the two policies: four points.
        assert_eq!(
            f.find(|n| n.name == "circle").len(),
            4,
            "{:?}",
            f.attr("data-figure")
        );
    }
    assert_eq!(doc.find(|n| n.has_class("ntt")).len(), 1);
    assert_eq!(doc.find(|n| n.has_class("policy-run")).len(), 2);
    assert_eq!(
        doc.find(|n| n.has_class("coremap")).len(),
        4,
        "2 sections + 2 maps"
    );
}

#[test]
fn report_refuses_a_directory_without_runs() {
    let dir = tempfile::tempdir().unwrap();
    let o = coloc_output(&["report", s(dir.path())]);
    let (_, err) = text(&o);
    assert!(!o.status.success());
    assert!(err.contains("neither trace.jsonl"), "{err}");
}

/// The browser: a path to Chromium, or None (with the reason printed) where it
/// is missing outside CI. In CI (CI=true) it must be there: scripts/setup
/// installs it.
fn chromium() -> Option<PathBuf> {
    let found = ["chromium", "chromium-browser"].iter().find_map(|name| {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|p| p.join(name))
                .find(|p| p.is_file())
        })
    });
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but no chromium on PATH: scripts/setup installs it"
        );
        eprintln!("skipped: no chromium on PATH (scripts/setup installs it)");
    }
    found
}

/// Opens `page` in headless Chromium; returns the screenshot's RGB rows and
/// width, and the console lines Chromium logged.
fn screenshot(browser: &Path, page: &Path, png: &Path) -> (Vec<u8>, usize, Vec<String>) {
    let t0 = Instant::now();
    let o = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1300,1000",
        ])
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    eprintln!(
        "chromium: {} in {:.1} s",
        page.display(),
        t0.elapsed().as_secs_f64()
    );
    let (_, err) = text(&o);
    assert!(png.exists(), "no screenshot: {err}");
    let console = err
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(String::from)
        .collect();
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let step = info.color_type.samples();
    let rgb: Vec<u8> = buf[..info.buffer_size()]
        .chunks(step)
        .flat_map(|p| [p[0], p[1], p[2]])
        .collect();
    (rgb, info.width as usize, console)
}

/// The core map's area in the screenshot, as (x0, y0, x1, y1): inside the frame
/// the page draws around the map's rows, in a colour (#b4a078) nothing else on
/// the page uses; its top and bottom edges are the screen rows with more than
/// 1000 pixels of it. None unless exactly two such rows are found.
fn map_area(rgb: &[u8], width: usize) -> Option<(usize, usize, usize, usize)> {
    let mut edges = Vec::new();
    for (y, row) in rgb.chunks(3 * width).enumerate() {
        let xs: Vec<usize> = row
            .chunks(3)
            .enumerate()
            .filter(|(_, p)| *p == [0xb4, 0xa0, 0x78])
            .map(|(x, _)| x)
            .collect();
        if xs.len() > 1000 {
            edges.push((y, xs[0], xs[xs.len() - 1]));
        }
    }
    match edges[..] {
        [(top, x0, x1), (bottom, _, _)] => Some((x0 + 1, top + 1, x1 - 1, bottom - 1)),
        _ => None,
    }
}

/// Pixels in `area` that are clearly one of the first two apps' colours (blue
/// or orange, at any shade), and the area's size.
fn app_pixels(
    rgb: &[u8],
    width: usize,
    area: (usize, usize, usize, usize),
) -> (usize, usize, usize) {
    let (mut blue, mut orange, mut total) = (0, 0, 0);
    for y in area.1..=area.3 {
        for x in area.0..=area.2 {
            let i = 3 * (y * width + x);
            let (r, g, b) = (
                i32::from(rgb[i]),
                i32::from(rgb[i + 1]),
                i32::from(rgb[i + 2]),
            );
            total += 1;
            // The palette's blue (31, 119, 180) and orange (255, 127, 14), even
            // at the lightest shade over the rows' grey, keep these orders.
            if b > r + 25 && b > g {
                blue += 1;
            } else if r > b + 40 && r > g {
                orange += 1;
            }
        }
    }
    (blue, orange, total)
}

#[test]
fn both_run_pages_render_in_chromium() {
    let Some(browser) = chromium() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (sim, _, _) = sim64_page(dir.path());
    let (real, _, _, _) = real_page(dir.path());
    for page in [sim, real] {
        let png = page.with_extension("png");
        let (rgb, width, console) = screenshot(&browser, &page, &png);
        if let Ok(keep) = std::env::var("COLOC_KEEP_SCREENSHOTS") {
            std::fs::copy(&png, Path::new(&keep).join(png.file_name().unwrap())).unwrap();
            std::fs::copy(&page, Path::new(&keep).join(page.file_name().unwrap())).unwrap();
        }
        assert!(console.is_empty(), "console output: {console:?}");
        let area = map_area(&rgb, width).expect("no core map rows in the screenshot");
        let (blue, orange, total) = app_pixels(&rgb, width, area);
        eprintln!(
            "{}: core map at {area:?}: {blue} blue and {orange} orange pixels of {total}",
            page.display()
        );
        // The map is wide and at least 2% coloured, and each app shows (how much
        // of a real run's map an app fills depends on how busy the machine was).
        assert!(area.2 - area.0 > 1000, "{area:?}");
        assert!((blue + orange) * 50 > total, "{}", page.display());
        assert!(
            blue * 500 > total && orange * 500 > total,
            "{}",
            page.display()
        );
    }
}

/// The page of an `auto` run says why each app got what it got, from the
/// trace's reasons: one block per app instance, with its partition and the
/// trial's verdict (the same lines as `coloc why`).
#[test]
fn a_run_page_shows_each_apps_reasons() {
    let dir = tempfile::tempdir().unwrap();
    let w = dir.path().join("tiny.toml");
    std::fs::write(&w, TINY).unwrap();
    let run = dir.path().join("run");
    let page = dir.path().join("run.html");
    ok(&["sim", s(&w), "--platform", "kvm-2cpu", "--out", s(&run)]);
    ok(&["report", s(&run), "--html", s(&page)]);
    let doc = parse(&std::fs::read_to_string(&page).unwrap());
    let blocks = doc.find(|n| n.has_class("app-why"));
    assert_eq!(blocks.len(), 2, "one per app instance");
    let (why, _) = ok(&["why", "bs", s(&run)]);
    let first = blocks[0].all_text();
    assert!(first.starts_with("bs 0.0"), "{first}");
    assert!(first.contains("why: partition CPUs"), "{first}");
    assert!(first.contains("trial: [0.0 1.0]"), "{first}");
    // The same history `coloc why` prints.
    let line = why.lines().nth(1).unwrap();
    assert!(
        first.contains(line.trim_start_matches("bs ")),
        "{line}\n{first}"
    );
}
