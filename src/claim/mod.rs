pub mod predicate;
