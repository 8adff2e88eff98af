//! The CSV opens in a spreadsheet with every number typed as a number: a real run's CSV is
//! converted by LibreOffice headless (Debian's libreoffice-calc-nogui, installed by .ci/run)
//! to flat ODS, and every numeric column's cells must come back as floats.

mod common;

use std::collections::HashMap;
use std::process::Command;

use common::*;

/// The value types of each row's cells, by column, from a flat ODS document.
fn cell_types(fods: &str) -> Vec<Vec<Option<String>>> {
    let mut rows = Vec::new();
    for row in fods.split("<table:table-row").skip(1) {
        let row = &row[..row.find("</table:table-row>").unwrap_or(row.len())];
        let mut cells = Vec::new();
        for cell in row.split("<table:table-cell").skip(1) {
            let attributes = &cell[..cell.find('>').unwrap_or(cell.len())];
            let attribute = |name: &str| {
                let start = attributes.find(&format!("{name}=\""))? + name.len() + 2;
                Some(attributes[start..start + attributes[start..].find('"')?].to_string())
            };
            let repeated: usize = attribute("table:number-columns-repeated").and_then(|n| n.parse().ok()).unwrap_or(1);
            let value_type = attribute("office:value-type");
            // Trailing runs of empty cells are repeated to the sheet's width; cap them.
            for _ in 0..repeated.min(64) {
                cells.push(value_type.clone());
            }
        }
        rows.push(cells);
    }
    rows
}

#[test]
#[cfg_attr(skip_root_tests, ignore = "FAULTSCALE_SKIP_ROOT_TESTS=1: needs root and a memory cgroup")]
fn every_numeric_cell_is_a_number_in_libreoffice() {
    let (_serial, _) = needs_root();
    let soffice = ["soffice", "libreoffice"]
        .into_iter()
        .find(|tool| {
            Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .output()
                .map(|o| o.status.success())
                .unwrap_or(false)
        })
        .expect("LibreOffice is missing: install Debian's libreoffice-calc-nogui (.ci/run does)");
    let base = runs_dir();
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("run.csv");
    let (_, output) = run_clean(
        &base,
        &[
            "--base",
            BASE,
            "--cgroup",
            "child,nested:2",
            "--duration",
            "0.3",
            "--repeat",
            "2",
            "--per-cpu",
            "--csv",
            csv.to_str().unwrap(),
        ],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));

    let profile = dir.path().join("lo-profile");
    let converted = Command::new(soffice)
        .arg(format!("-env:UserInstallation=file://{}", profile.display()))
        .args(["--headless", "--convert-to", "fods", "--outdir"])
        .arg(dir.path())
        .arg(&csv)
        .output()
        .unwrap();
    let fods_path = dir.path().join("run.fods");
    assert!(fods_path.exists(), "conversion failed: {}{}", text(&converted.stdout), text(&converted.stderr));
    let fods = std::fs::read_to_string(fods_path).unwrap();

    let rows = read_csv(&csv);
    let header: Vec<String> = {
        let mut reader = csv::Reader::from_path(&csv).unwrap();
        reader.headers().unwrap().iter().map(str::to_string).collect()
    };
    let types = cell_types(&fods);
    assert_eq!(types.len(), rows.len() + 1, "one sheet row per CSV line");
    let numeric = [
        "tasks",
        "depth",
        "repetition",
        "sequence",
        "duration_s",
        "faults",
        "faults_per_sec",
        "faults_per_sec_per_task",
        "kernel_faults",
        "user_s",
        "sys_s",
        "memcg_pgfault",
        "start_skew_us",
        "overhead_vs_baseline",
        "ns_per_fault",
        "cpu",
    ];
    let mut checked = 0;
    for (row_index, row) in rows.iter().enumerate() {
        let sheet_row = &types[row_index + 1];
        let by_name: HashMap<&str, &Option<String>> = header.iter().map(String::as_str).zip(sheet_row.iter()).collect();
        for column in numeric {
            if row[column].is_empty() {
                continue; // per-CPU rows leave summary-only cells empty
            }
            assert_eq!(
                by_name[column].as_deref(),
                Some("float"),
                "row {} column {column} = {:?} is not a number in the spreadsheet",
                row_index + 2,
                row[column]
            );
            checked += 1;
        }
        for column in ["placement", "cgroup_path", "kernel", "workload"] {
            assert_eq!(by_name[column].as_deref(), Some("string"), "{column}");
        }
    }
    assert!(checked > 100, "only {checked} numeric cells checked");
}
