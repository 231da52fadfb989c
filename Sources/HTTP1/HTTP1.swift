// Placeholder so the module builds; replaced by the module's real types.
enum HTTP1Module {}
