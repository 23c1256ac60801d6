import Foundation

extension SuitePersistence {
  /// The persistence of a suite's plist, whose memory is corelibs' copy (Linux).
  convenience init(defaults: UserDefaults, domain: CorelibsDomain) {
    self.init(record: SuiteFileRecord(file: SuiteFile(suiteName: domain.name), corelibs: domain, defaults: defaults))
  }
}
