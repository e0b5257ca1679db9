//! The store contract suite against the sqlite store.

svc_contract_tests::contract_suite!(svc_contract_tests::sqlite);
