export { identityModule } from './identity.module.js';
export { User, UserSchema, type UserStatus } from './entities/user.entity.js';
export { Team, TeamMember, TeamSchema, TeamMemberSchema, teamRoles, type TeamRole } from './entities/team.entity.js';
export { AccessKey, AccessKeySchema, type AccessKeyKind } from './entities/access-key.entity.js';
export { UserService, normaliseEmail, type CreateUserInput, type UpdateUserInput } from './services/user.service.js';
export { TeamService } from './services/team.service.js';
export { JwtService, type JwtClaims } from './services/jwt.service.js';
export { AccessKeyService, accessKeyPrefixes, type IssueAccessKeyInput } from './services/access-key.service.js';
export { toUserView, toTeamView, toMemberView, toAccessKeyView, toPrincipalUser } from './views.js';
export { userSchema, type UserView, type TeamView, type MemberView, type AccessKeyView, sessionSchema } from './schemas.js';
// Used by other modules (added by scripts/module-doors.ts; keep or sort by hand as you like)
export { principalUserColumns, principalUserFromRow } from './queries.js';
export { unknownCredential, unknownOrDisabledUser } from './verifiers/errors.js';
