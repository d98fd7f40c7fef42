//! The rules on a copied column's definition: a `target:` keeps everything but the charset,
//! collation and TEXT-family widening unless the job says `redefine: true`, and a generated
//! column is the server's to compute, not the job's to copy.

use super::{At, Class, Facts, Refusal};
use crate::detect::Label;
use crate::job::definition::{self, Live};
use crate::job::model::TableJob;
use crate::job::target;

/// A copied column whose target drops or changes what the column has, and a generated one.
pub(super) fn target_redefines(t: &Facts, job: &TableJob, out: &mut Vec<Refusal>) {
    for (j, c) in job.columns.iter().enumerate() {
        let Some(col) = t.columns.iter().find(|x| x.name == c.name) else {
            continue;
        };
        if let Some(g) = &col.definition.generated {
            out.push(Refusal {
                class: Class::GeneratedInJob,
                at: At::Column(j),
                reason: format!(
                    "column '{}' of table '{}' is generated (AS ({})): the server computes its values, the copy cannot write them",
                    c.name, t.name, g.expression
                ),
                fix: "leave it out of the job: the copy recreates it on the new table with its expression's text recoded".into(),
            });
            continue;
        }
        if c.redefine {
            continue;
        }
        // A target that does not parse is reported by `plan --check` as such.
        let Ok(def) = target::parse(&c.target) else {
            continue;
        };
        let live = Live {
            column_type: col.column_type,
            charset: col.charset,
            nullable: col.nullable,
            definition: col.definition,
        };
        let found = definition::differences(live, &def);
        if found.is_empty() {
            continue;
        }
        let read: Vec<Label> = c.source.fixed().into_iter().collect();
        let base = match def.length {
            Some(n) if !matches!(def.data_type.as_str(), "enum" | "set") => {
                format!("{}({n})", def.data_type)
            }
            _ if matches!(def.data_type.as_str(), "enum" | "set") => col.column_type.to_string(),
            _ => def.data_type.clone(),
        };
        let keep = definition::target_sql(
            live,
            &base,
            def.charset.as_deref(),
            def.collation.as_deref(),
            &read,
        )
        .map(|s| format!("write the target as `{s}`"))
        .unwrap_or_else(|e| {
            format!("write the column's DEFAULT, COMMENT and members into the target ({e})")
        });
        out.push(Refusal {
            class: Class::TargetRedefines,
            at: At::Column(j),
            reason: format!(
                "the target of column '{}' of table '{}' {}: after the cut-over the application would find the column changed",
                c.name,
                t.name,
                found.join("; ")
            ),
            fix: format!("{keep}, or add `redefine: true` to the column if the change is meant"),
        });
    }
}
