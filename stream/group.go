package stream

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
)

// oneMemberProtocol is the name of the service's consumer-group protocol;
// every member of a group must speak it, so that an older forecaster
// (which split the partitions) cannot join the group unnoticed.
const oneMemberProtocol = "sdgnn-one-member"

// oneMember is the consumer-group balancer of the service: every partition
// of the readings topic to one member, since a forecast needs the windows
// of its receptive sensors, whose readings may be on any partition. The
// member that holds them keeps them; when none does, the one that started
// first takes them. A second service in the same group is a standby: it
// holds nothing until the holder leaves, then takes every partition (and,
// with a shared state file, the holder's state; see Config.StateFile), and
// keeps them when the former holder comes back.
type oneMember struct {
	since   time.Time   // when this member started
	holding func() bool // whether it holds the partitions now; nil: no
}

func (oneMember) ProtocolName() string { return oneMemberProtocol }

// UserData is the member's start time in Unix nanoseconds, decimal, and
// ":1" when it holds the partitions as it joins.
func (b oneMember) UserData() ([]byte, error) {
	d := strconv.AppendInt(nil, b.since.UnixNano(), 10)
	if b.holding != nil && b.holding() {
		d = append(d, ":1"...)
	}
	return d, nil
}

// AssignGroups gives every partition to a member that says it holds them,
// else to the member that started first (ties and unreadable user data:
// the smallest member id).
func (oneMember) AssignGroups(members []kafka.GroupMember, partitions []kafka.Partition) kafka.GroupMemberAssignments {
	out := kafka.GroupMemberAssignments{}
	if len(members) == 0 {
		return out
	}
	parse := func(m kafka.GroupMember) (holds int, since int64) {
		d, held := strings.CutSuffix(string(m.UserData), ":1")
		v, err := strconv.ParseInt(d, 10, 64)
		if err != nil {
			v = 1<<63 - 1
		}
		if held {
			return 0, v
		}
		return 1, v
	}
	holder := slices.MinFunc(members, func(a, b kafka.GroupMember) int {
		ha, sa := parse(a)
		hb, sb := parse(b)
		return cmp.Or(cmp.Compare(ha, hb), cmp.Compare(sa, sb), strings.Compare(a.ID, b.ID))
	})
	for _, m := range members {
		out[m.ID] = map[string][]int{}
	}
	for _, p := range partitions {
		out[holder.ID][p.Topic] = append(out[holder.ID][p.Topic], p.ID)
	}
	return out
}

// newClientID returns a client id unique to this process and service, by
// which the service finds itself among the members of its group.
func newClientID() string {
	host, _ := os.Hostname()
	var b [4]byte
	rand.Read(b[:])
	return fmt.Sprintf("sdgnn-forecaster-%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// judgeAssignment says whether the member with client id self holds every
// one of the partitions of topic in group g, as DescribeGroups reports it.
func judgeAssignment(g kafka.DescribeGroupsResponseGroup, self, topic string, partitions int) (bool, string) {
	held := func(m kafka.DescribeGroupsResponseMember) int {
		n := 0
		for _, t := range m.MemberAssignments.Topics {
			if t.Topic == topic {
				n += len(t.Partitions)
			}
		}
		return n
	}
	var me *kafka.DescribeGroupsResponseMember
	var holders []string
	for i, m := range g.Members {
		if m.ClientID == self {
			me = &g.Members[i]
		} else if n := held(m); n > 0 {
			holders = append(holders, fmt.Sprintf("%s on %s holds %d", m.ClientID, strings.TrimPrefix(m.ClientHost, "/"), n))
		}
	}
	if me == nil {
		return false, fmt.Sprintf("not a member of group %s yet (%s, %d members)", g.GroupID, g.GroupState, len(g.Members))
	}
	switch mine := held(*me); {
	case mine == partitions:
		standbys := "no standby"
		switch k := len(g.Members) - 1; {
		case k == 1:
			standbys = "1 standby"
		case k > 1:
			standbys = fmt.Sprintf("%d standbys", k)
		}
		return true, fmt.Sprintf("holds all %d partitions of %s (group %s, %s)", partitions, topic, g.GroupID, standbys)
	case mine == 0 && len(holders) > 0:
		return false, fmt.Sprintf("standby in group %s: %s", g.GroupID, strings.Join(holders, "; "))
	case mine == 0:
		return false, fmt.Sprintf("no partitions assigned yet in group %s (%s)", g.GroupID, g.GroupState)
	default:
		return false, fmt.Sprintf("holds %d of the %d partitions of %s: every sensor's readings must reach one service (another member: %s)", mine, partitions, topic, strings.Join(holders, "; "))
	}
}

// checkAssignment asks the group coordinator how group's partitions are
// assigned, over t, and judges this service's share (see judgeAssignment);
// stable says whether the group was Stable, its assignment settled.
func checkAssignment(ctx context.Context, t *kafka.Transport, brokers []string, group, self, topic string, partitions int) (ok bool, detail string, stable bool, err error) {
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Transport: roundTripper(t)}
	resp, err := client.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
	if err != nil {
		return false, "", false, fmt.Errorf("describe group %s: %w", group, err)
	}
	if len(resp.Groups) != 1 {
		return false, "", false, fmt.Errorf("describe group %s: %d groups in the answer", group, len(resp.Groups))
	}
	if err := resp.Groups[0].Error; err != nil {
		return false, "", false, fmt.Errorf("describe group %s: %w", group, err)
	}
	ok, detail = judgeAssignment(resp.Groups[0], self, topic, partitions)
	return ok, detail, resp.Groups[0].GroupState == "Stable", nil
}
