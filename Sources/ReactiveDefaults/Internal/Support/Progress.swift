/// Progress of long work (an import of a million keys), reported to whoever asked for it with
/// ``DefaultsStore/reportingProgress(_:_:)`` around the work, on the working thread. Reports are cheap and rare
/// (once per 16,384 keys); nothing is reported when nobody asked.
enum Progress {
  @TaskLocal static var handler: (@Sendable (DefaultsStore.WorkPhase, Int, Int) -> Void)?

  /// `done` of `total` units of `phase` are done (0 of them: the phase begins).
  static func report(_ phase: DefaultsStore.WorkPhase, done: Int, of total: Int) {
    handler?(phase, done, total)
  }
}
