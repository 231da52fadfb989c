import HTTPTypes

extension HTTPFields {
    /// The value of the field called `name`, exactly as `self[name]` reads it (several fields of
    /// that name joined with `", "`, `nil` when there is none), for the fields a request handler
    /// reads on every request.
    ///
    /// `self[name]` walks a lazy sequence and builds a joined string even for a single field,
    /// which is what a request nearly always has: under 32 writers, six such reads per change set
    /// cost more CPU than parsing its JSON body. This scans the fields once and returns the one
    /// value as it is; only a repeated field takes the joining path.
    ///
    /// ```swift
    /// let contentType = request.headerFields.value(of: .contentType) ?? ""
    /// ```
    public func value(of name: HTTPField.Name) -> String? {
        let canonicalName = name.canonicalName
        var found: String?
        for field in self where field.name.canonicalName == canonicalName {
            guard found == nil else { return self[name] }
            found = field.value
        }
        return found
    }
}
