package contender

import (
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// peerTTL is the fixed TTL (lease) of the peers that do not renew
// (redislock, redsync): fairrw's default watchdog lease, so that no hold
// expires in the middle of a benchmark.
const peerTTL = 30 * time.Second

// goRedisOptions are the go-redis options of the peers built on go-redis:
// one standalone server at opt.InitAddress[0], with opt's credentials,
// database and TLS, and go-redis's defaults for everything else (a pool of
// 10 connections per CPU, RESP3 unless opt.AlwaysRESP2).
func goRedisOptions(opt rueidis.ClientOption) *redis.Options {
	o := &redis.Options{
		Addr:       opt.InitAddress[0],
		Username:   opt.Username,
		Password:   opt.Password,
		DB:         opt.SelectDB,
		ClientName: opt.ClientName,
	}
	if opt.TLSConfig != nil {
		o.TLSConfig = opt.TLSConfig.Clone()
	}
	if opt.AlwaysRESP2 {
		o.Protocol = 2
	}
	return o
}

// goRedisSupports refuses the parts of a ClientOption that goRedisOptions
// cannot carry over, rather than ignoring them.
func goRedisSupports(opt rueidis.ClientOption, _ bool) error {
	switch {
	case len(opt.InitAddress) > 1:
		return errors.New("built on a go-redis client for one standalone server: give one InitAddress")
	case opt.Sentinel.MasterSet != "":
		return errors.New("built on a go-redis client for one standalone server: no Sentinel")
	case opt.DialFn != nil || opt.DialCtxFn != nil:
		return errors.New("its go-redis client cannot use the ClientOption's DialFn/DialCtxFn")
	case opt.AuthCredentialsFn != nil:
		return errors.New("its go-redis client cannot use the ClientOption's AuthCredentialsFn")
	}
	return nil
}
