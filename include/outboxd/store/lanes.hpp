#pragma once

// The lanes of one database and the stores each consumer's jobs get: a lane prepares the
// statements of its own stores and no others (see OutboxSession::Uses).
//   claims, claims apart  ClaimStores        ClaimLane
//   outcomes, leases      OutcomeStores      OutcomeLane
//   maintenance           MaintenanceStores  MaintenanceLane (schedules fire here)
//   API, settings caches  AdminStores        AdminLane (rows, targets, schedules,
//                                            credentials, audit log)
//   cluster membership    ClusterStores      ClusterLane
// Thread affinity: made and used on the lane's thread only (store/db_lane.hpp).

#include "outboxd/store/access_store.hpp"
#include "outboxd/store/admin_store.hpp"
#include "outboxd/store/claim_store.hpp"
#include "outboxd/store/cluster_store.hpp"
#include "outboxd/store/db_lane.hpp"
#include "outboxd/store/maintenance_store.hpp"
#include "outboxd/store/outbox_session.hpp"
#include "outboxd/store/outcome_store.hpp"
#include "outboxd/store/schedule_store.hpp"
#include "outboxd/store/target_store.hpp"

namespace outboxd::store {

struct ClaimStores {
    explicit ClaimStores(const LaneConnection& connection);
    OutboxSession session;
    ClaimStore claims{session};
};

struct OutcomeStores {
    explicit OutcomeStores(const LaneConnection& connection);
    OutboxSession session;
    OutcomeStore outcomes{session};
};

struct MaintenanceStores {
    explicit MaintenanceStores(const LaneConnection& connection);
    OutboxSession session;
    MaintenanceStore maintenance{session};
    ScheduleStore schedules{session};
};

struct AdminStores {
    explicit AdminStores(const LaneConnection& connection);
    OutboxSession session;
    AdminStore admin{session};
    TargetStore targets;
    ScheduleStore schedules{session};
    AccessStore access{session};  // the control database's credentials and audit log
};

struct ClusterStores {
    explicit ClusterStores(const LaneConnection& connection) : cluster(connection.database_url) {}
    ClusterStore cluster;
};

using ClaimLane = DbLane<ClaimStores>;
using OutcomeLane = DbLane<OutcomeStores>;
using MaintenanceLane = DbLane<MaintenanceStores>;
using AdminLane = DbLane<AdminStores>;
using ClusterLane = DbLane<ClusterStores>;

}  // namespace outboxd::store
