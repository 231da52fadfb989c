import CSQLite

/// The WAL hook: stores the frame count where the connection's context pointer points.
enum WALHook {
    static let recordFrames:
        @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, UnsafePointer<CChar>?, Int32)
            -> Int32 = { context, _, _, frames in
                context?.assumingMemoryBound(to: Int32.self).pointee = frames
                return SQLITE_OK
            }
}
