//! The store contract suite against the memory store.

svc_contract_tests::contract_suite!(svc_contract_tests::memory);
