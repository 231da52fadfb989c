import Glibc

/// The process's open-file limit. `jetstream serve` and `jetstream bench` raise the soft limit to
/// the hard one at start (as Go's runtime and nginx's `worker_rlimit_nofile` do), because ten
/// thousand streams need ten thousand descriptors and Debian's default soft limit is 1024.
///
/// ```swift
/// let limit = FileDescriptorLimit.raiseToHardLimit()   // e.g. 1048576
/// ```
public enum FileDescriptorLimit {
    /// Raises the soft RLIMIT_NOFILE to the hard limit and returns the soft limit now in force.
    @discardableResult
    public static func raiseToHardLimit() -> Int {
        var limit = rlimit()
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        guard getrlimit(resource, &limit) == 0 else { return 1024 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(resource, &raised) == 0 { limit = raised }
        }
        return limit.rlim_cur > rlim_t(Int.max) ? Int.max : Int(limit.rlim_cur)
    }
}
