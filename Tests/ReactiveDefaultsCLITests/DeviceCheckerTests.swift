import Foundation
import HistoryChecker
import TestSupport
import Testing

/// The device checker (`rdefaults-test-helper devices`): its rules fire on histories that break them, and seeded
/// histories over the cloud model and a synced folder keep the sync's contract.
@Suite struct DeviceCheckerTests {
  private let plan = DevicePlan(
    seed: 0, folder: false, skews: [0, 0], startsJoined: [true, true], ownValues: [[nil, nil, nil], [nil, nil, nil]],
    operations: [])

  private func stamp(_ wall: Int64, _ device: String) -> DeviceStamp {
    DeviceStamp(wall: wall, counter: 0, device: device)
  }

  /// Two devices that both hold 5, written by `one` at wall time 10, and heard it.
  private func agreeing() -> DeviceHistory {
    var history = DeviceHistory()
    history.deviceNames = ["one", "two"]
    history.finalValues = [[5, nil, nil], [5, nil, nil]]
    history.heard = [[[nil, 5], [nil], [nil]], [[nil, 5], [nil], [nil]]]
    history.writes = [.init(operation: 0, device: 0, key: 0, value: 5, account: "A", wall: 10)]
    history.uploads = [.init(account: "A", key: 0, value: 5, stamp: stamp(10, "one"))]
    return history
  }

  @Test func aHistoryThatKeepsTheContractPasses() {
    #expect(agreeing().violations(of: plan) == [])
  }

  @Test func aDeviceLeftOnAnotherValueIsFlagged() {
    var history = agreeing()
    history.finalValues[1][0] = nil
    history.heard[1][0] = [nil]
    #expect(history.violations(of: plan).contains { $0.contains("device 1 holds nothing, not 5") })
  }

  @Test func aPullThatStampsIsFlagged() {
    var history = agreeing()
    history.uploads.append(.init(account: "A", key: 0, value: 5, stamp: stamp(11, "two")))
    #expect(history.violations(of: plan).contains { $0.contains("stamped by two, which did not write it") })
  }

  @Test func aPushedOwnValueIsFlagged() {
    var history = agreeing()
    history.uploads.append(.init(account: "A", key: 1, value: DevicePlan.ownValueBase, stamp: stamp(12, "two")))
    #expect(history.violations(of: plan).contains { $0.contains("own value 1000000 from before its sync was pushed") })
  }

  @Test func aLostWriteIsFlaggedUnlessALaterStampBeatIt() {
    var history = agreeing()
    history.writes.append(.init(operation: 1, device: 1, key: 0, value: 7, account: "A", wall: 20))
    #expect(history.violations(of: plan).contains { $0.contains("device 1's last write 7") })
    // Beaten by a write stamped later than the lost one could be: no violation of that rule.
    history.writes.append(.init(operation: 2, device: 0, key: 0, value: 9, account: "A", wall: 30))
    history.uploads.append(.init(account: "A", key: 0, value: 9, stamp: stamp(30, "one")))
    history.finalValues = [[9, nil, nil], [9, nil, nil]]
    history.heard = [[[nil, 5, 9], [nil], [nil]], [[nil, 5, 7, 9], [nil], [nil]]]
    #expect(history.violations(of: plan) == [])
  }

  /// A write made after the device pulled another's entry outranks it, whatever the clocks say: device 1, its clock
  /// behind, pulled 5 (stamped 10 by one), then wrote 7; stamped 8 (its clock ignored the pull), 7 loses to 5, and
  /// the lost-write rule excuses it (a later stamp beat it). Stamped above 5, it keeps the contract.
  @Test func aWriteAfterAPullStampedBelowThePulledEntryIsFlagged() {
    var history = agreeing()
    history.writes.append(.init(operation: 1, device: 1, key: 0, value: 7, account: "A", wall: 8, seen: 5))
    history.uploads.append(.init(account: "A", key: 0, value: 7, stamp: stamp(8, "two")))
    #expect(
      history.violations(of: plan) == [
        "key 0: device 1's write 7 (operation 1) was made after it pulled 5 stamped \(stamp(10, "one")), yet is "
          + "stamped \(stamp(8, "two")), not above it: a write after a pull must outrank the pulled entry"
      ])
    history.uploads[1].stamp = DeviceStamp(wall: 10, counter: 1, device: "two")
    history.finalValues = [[7, nil, nil], [7, nil, nil]]
    history.heard = [[[nil, 5, 7], [nil], [nil]], [[nil, 5, 7], [nil], [nil]]]
    #expect(history.violations(of: plan) == [])
  }

  @Test func aWriteAKillUndidIsNotOwedButTheOneBeforeItIs() {
    var history = agreeing()
    // Device 0 wrote 7 after its 5, and was killed before 7 was saved: 7 is undone; the 5 it holds reached the remote.
    var lost = DeviceHistory.Write(operation: 1, device: 0, key: 0, value: 7, account: "A", wall: 20)
    lost.undone = true
    history.writes.append(lost)
    #expect(history.violations(of: plan) == [])
    // Had the 5 never reached it, the rule looks past the undone write to it.
    history.uploads = []
    #expect(history.violations(of: plan).contains { $0.contains("device 0's last write 5") })
  }

  @Test func anObserverToldTwiceOrLeftBehindIsFlagged() {
    var history = agreeing()
    history.heard[0][0] = [nil, 5, 5]
    history.heard[1][0] = [nil]
    let found = history.violations(of: plan)
    #expect(found.contains { $0.contains("heard 5 twice in a row") })
    #expect(found.contains { $0.contains("device 1's observer was left on nothing") })
  }

  /// A forged copy of a device's file (its stamp, another value) is no device's write: its value may reach the
  /// folder under that stamp, it stands in for the write it replaced, and of two entries with one stamp, the one the
  /// sync ranks first (by its value's XML: 5 above 12, any value above none) is what every device must hold.
  @Test func aForgedCopyStandsInForTheWriteItReplacedAndRanksByValue() {
    var history = agreeing()
    history.uploads = [.init(account: "A", key: 0, value: 12, stamp: stamp(10, "one"))]
    (history.finalValues, history.heard) = (
      [[12, nil, nil], [12, nil, nil]], [[[nil, 12], [nil], [nil]], [[nil, 12], [nil], [nil]]]
    )
    #expect(history.violations(of: plan).contains { $0.contains("12 reached account A stamped by one, which did not") })
    #expect(
      history.violations(of: plan).contains { $0.contains("device 0's last write 5 (operation 0, clock 10) never") })
    // A forgery made before the write stands in for none.
    history.forgeries = [.init(operation: 0, key: 0, value: 12, device: "one")]
    #expect(
      history.violations(of: plan).contains { $0.contains("device 0's last write 5 (operation 0, clock 10) never") })
    history.forgeries = [.init(operation: 1, key: 0, value: 12, device: "one")]
    #expect(history.violations(of: plan) == [])
    history.uploads.append(.init(account: "A", key: 0, value: 5, stamp: stamp(10, "one")))
    #expect(history.violations(of: plan).contains { $0.contains("device 0 holds 12, not 5 of the greatest stamp") })
    let atOneStamp = { (value: Int?) in
      DeviceHistory.Upload(account: "A", key: 0, value: value, stamp: self.stamp(10, "one"))
    }
    #expect(DeviceHistory.outranks(atOneStamp(5), atOneStamp(12)))
    #expect(DeviceHistory.outranks(atOneStamp(12), atOneStamp(nil)))
    #expect(!DeviceHistory.outranks(atOneStamp(12), atOneStamp(12)))
    #expect(DeviceHistory.outranks(.init(account: "A", key: 0, value: nil, stamp: stamp(11, "one")), atOneStamp(5)))
  }

  @Test func onlyTheHostilePeersRefusalsAreExpected() {
    #expect(
      DeviceHistory.isHostileRefusal(
        "problem Synced key 'a': the entry of device hostile is refused: its counter"))
    #expect(
      !DeviceHistory.isHostileRefusal(
        "problem Synced key 'a': the entry of device 6BAE3D24 is refused: x"))
  }

  @Test func aSeedNamesOnePlanWithinTheBounds() {
    #expect(DevicePlan.make(seed: 7, folder: false) == DevicePlan.make(seed: 7, folder: false))
    var hostile = 0
    for seed in UInt64(0)..<200 {
      let plan = DevicePlan.make(seed: seed, folder: seed.isMultiple(of: 2))
      #expect((2...4).contains(plan.devices))
      #expect(plan.skews.allSatisfy { abs($0) <= 3 * 3_600_000 })
      let values = plan.operations.compactMap { operation -> Int? in
        switch operation {
        case .write(_, _, let value), .forge(_, _, let value): value
        default: nil
        }
      }
      #expect(Set(values).count == values.count)
      if plan.folder {
        #expect(!plan.operations.contains { if case .switchAccount = $0 { true } else { false } })
        hostile += plan.operations.filter(Self.isHostile).count
      } else {
        #expect(!plan.operations.contains(where: Self.isHostile))
      }
      #expect(!plan.operations.contains { if case .kill = $0 { true } else { false } })
    }
    // Hostile peers, in about one folder operation of ten.
    #expect(hostile >= 200)
    // Processes: over the folder, with kills (and only there), each within 120 ms of the operation before it.
    let plans = (UInt64(0)..<50).map { DevicePlan.make(seed: $0, folder: false, processes: true) }
    #expect(plans.allSatisfy { $0.folder && $0.processes })
    let kills = plans.flatMap(\.operations).compactMap { if case .kill(_, let delay) = $0 { delay } else { nil } }
    #expect(kills.count >= 25)
    #expect(kills.allSatisfy { (0...120_000).contains($0) })
  }

  private static func isHostile(_ operation: DevicePlan.Operation) -> Bool {
    switch operation {
    case .garbage, .forge, .deleteFile, .conflictCopy, .emptyFolder: true
    default: false
    }
  }

  @Test func seededHistoriesKeepTheContract() async throws {
    let seeds = (1...40).map(String.init).joined(separator: ",")
    let result = try await runTool(
      ["devices", "--both", "--seeds", seeds], config: makeConfigFolder(), tool: "rdefaults-test-helper")
    #expect(result.status == 0, "\(result.output)\(result.error)")
    #expect(result.output.contains("checked 80 histories, 0 failed"), "\(result.output)")
    // The hostile peers' entries were met, refused and reported (and only theirs: any other report fails a history).
    #expect(!result.output.contains("; 0 hostile entries refused"), "\(result.output)")
  }

  /// Devices as processes over real suites, killed at random moments (a write's save or its push under way) and
  /// started again: what the kill did not lose reaches every device. Linux: each device's suite is its own through
  /// its XDG_CONFIG_HOME; on Apple platforms the preferences daemon would give every device the one domain.
  @Test(.linuxOnly) func seededHistoriesOfKilledProcessesKeepTheContract() async throws {
    let result = try await runTool(
      ["devices", "--processes", "--seeds", "1,2,3,4,5,6"], config: makeConfigFolder(), tool: "rdefaults-test-helper")
    #expect(result.status == 0, "\(result.output)\(result.error)")
    #expect(result.output.contains("checked 6 histories, 0 failed"), "\(result.output)")
  }
}
