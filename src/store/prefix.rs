//! Claim ids by prefix, for short ids on the command line (like git's short hashes).

impl super::Store {
    /// Ids of stored claims that start with `prefix`, in id order, at most `limit` of them
    /// (ask for one more than you will show to know whether there are more).
    pub fn ids_with_prefix(
        &self,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<String>, super::StoreError> {
        Ok(self
            .claim_ids()?
            .into_iter()
            .filter(|id| id.starts_with(prefix))
            .take(limit)
            .collect())
    }
}
