//! The store contract suite against the postgres store.

svc_contract_tests::contract_suite!(svc_contract_tests::postgres);
