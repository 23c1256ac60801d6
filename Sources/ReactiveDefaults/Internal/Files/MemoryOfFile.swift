/// What memory is against a file: corelibs' copy of a suite (``CorelibsDomain/Memory``), or a file store's own
/// (``FileMemory``).
enum MemoryOfFile: Equatable, Sendable {
  /// Unknown, or known to miss something: the next reload or edit must reload.
  case untrusted
  /// The file as it was missing: no file, loaded as an empty domain.
  case absent
  /// The file at this stamp, as this process last saved or loaded it.
  case loaded(SuiteFile.Stamp)

  /// The copy a load made of the file whose stamp (taken before the load) was `stamp`; nil: no file.
  init(loadedAt stamp: SuiteFile.Stamp?) {
    self = stamp.map(MemoryOfFile.loaded) ?? .absent
  }

  /// Whether memory is the file whose stamp is `stamp` (nil: no file).
  func isFile(_ stamp: SuiteFile.Stamp?) -> Bool {
    switch (self, stamp) {
    case (.absent, nil): true
    case (.loaded(let synced), let stamp?): synced == stamp
    default: false
    }
  }
}
