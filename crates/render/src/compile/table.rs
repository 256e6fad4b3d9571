//! `RoutingTable`s: table ids outside the kernel's own, unique across VRFs and tables, and the
//! table's VRF device name.

use netrollout_api::naming::{TABLE_PREFIX, interface};
use netrollout_api::{NamedInput, RoutingTableConfig, RoutingTableSpec};

use super::{Compiler, TABLE_KIND, Table, in_range};

impl Compiler {
    pub(super) fn tables(&mut self, inputs: &[NamedInput<RoutingTableSpec>]) {
        for input in inputs {
            let name = input.name.as_str();
            let Some(table) = in_range(
                &mut self.invalid,
                TABLE_KIND,
                name,
                "spec.tableId",
                input.spec.table_id,
                1,
                u32::MAX.into(),
            ) else {
                continue;
            };
            if !self.claim_table(
                table,
                format!("{TABLE_KIND} {name:?}"),
                TABLE_KIND,
                name,
                "spec.tableId",
            ) {
                continue;
            }
            let selector = self.selector(TABLE_KIND, name, None);
            self.out.tables.push(Table {
                config: RoutingTableConfig {
                    source: name.to_string(),
                    table_id: table,
                    interface: interface(TABLE_PREFIX, table),
                },
                selector,
            });
        }
        self.out.tables.sort_by_key(|t| t.config.table_id);
    }
}
